import { Schema, model, type Types } from 'mongoose';
import { widgetTypes } from './schemas.js';

const widgetSchema = new Schema(
  {
    widgetId: { type: String, required: true },
    title: { type: String, required: true },
    type: { type: String, enum: widgetTypes, required: true },
    view: { type: String, required: true },
    /** The view's query parameters as given, as JSON text: FerretDB refuses keys with dots or `$`. */
    params: { type: String, required: true },
    layout: {
      x: { type: Number, required: true },
      y: { type: Number, required: true },
      w: { type: Number, required: true },
      h: { type: Number, required: true },
    },
  },
  { _id: false },
);

const dashboardSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  name: { type: String, required: true },
  description: { type: String, default: null },
  widgets: { type: [widgetSchema], default: [] },
  createdBy: { type: Schema.Types.ObjectId, default: null },
  createdAt: { type: Date, required: true },
  updatedAt: { type: Date, required: true },
});
// an organisation's dashboards, oldest first (keyset paging).
dashboardSchema.index({ orgId: 1, createdAt: 1, _id: 1 });

export interface WidgetDoc {
  widgetId: string;
  title: string;
  type: (typeof widgetTypes)[number];
  view: string;
  params: string;
  layout: { x: number; y: number; w: number; h: number };
}

export interface DashboardDoc {
  _id: Types.ObjectId;
  orgId: Types.ObjectId;
  name: string;
  description: string | null;
  widgets: WidgetDoc[];
  createdBy: Types.ObjectId | null;
  createdAt: Date;
  updatedAt: Date;
}

export const Dashboard = model('Dashboard', dashboardSchema, 'dashboards');
