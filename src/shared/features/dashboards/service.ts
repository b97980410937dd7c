import { Types } from 'mongoose';
import type { z } from 'zod';
import { chargeWork, checkDeadline } from '../../context.js';
import { notFound } from '../../errors.js';
import { paginate, parseId } from '../../paging.js';
import type { MemberPrincipal } from '../../principal.js';
import { inParallel } from '../../telemetry/storage.js';
import { auditAs } from '../audit/service.js';
import { Dashboard, type DashboardDoc, type WidgetDoc } from './model.js';
import { MAX_RESOLVED_WIDGETS, type dashboardJson, type listDashboardsQuery, type updateDashboardBody, type WidgetInput, type WidgetParams, type widgetError, type widgetJson } from './schemas.js';

type DashboardJson = z.infer<typeof dashboardJson>;
type WidgetJson = z.infer<typeof widgetJson>;

/** A widget's view answered: its data, or the error the view gave. */
export type ViewAnswer = { data: unknown } | { error: z.infer<typeof widgetError> };
/** Answers a widget's view for the caller; supplied by the API, which owns the views. */
export type ViewResolver = (view: string, params: WidgetParams) => Promise<ViewAnswer>;

/** Views answered at once while resolving one dashboard. */
const PARALLEL_VIEWS = 4;

const widgetJsonOf = (widget: WidgetDoc): WidgetJson => ({
  id: widget.widgetId,
  title: widget.title,
  type: widget.type,
  query: { view: widget.view, params: JSON.parse(widget.params) as WidgetParams },
  layout: { x: widget.layout.x, y: widget.layout.y, w: widget.layout.w, h: widget.layout.h },
});

const dashboardJsonOf = (dashboard: DashboardDoc): DashboardJson => ({
  id: dashboard._id.toHexString(),
  name: dashboard.name,
  description: dashboard.description ?? null,
  widgets: dashboard.widgets.map(widgetJsonOf),
  created_at: dashboard.createdAt.toISOString(),
  updated_at: dashboard.updatedAt.toISOString(),
  created_by: dashboard.createdBy?.toHexString() ?? null,
});

/** Widgets as stored: ids kept when given, new ones assigned. */
const widgetDocsOf = (widgets: WidgetInput[]): WidgetDoc[] =>
  widgets.map((widget) => ({
    widgetId: widget.id ?? new Types.ObjectId().toHexString(),
    title: widget.title,
    type: widget.type,
    view: widget.query.view,
    params: JSON.stringify(widget.query.params),
    layout: widget.layout,
  }));

async function findDashboard(orgId: Types.ObjectId, dashboardId: string): Promise<DashboardDoc> {
  // another organisation's dashboard is not found, exactly like a missing one
  const dashboard = await Dashboard.findOne({ _id: parseId(dashboardId, 'dashboard'), orgId }).lean<DashboardDoc>();
  if (!dashboard) throw notFound('dashboard');
  return dashboard;
}

export async function createDashboard(
  principal: MemberPrincipal,
  input: { name: string; description?: string | null | undefined; widgets: WidgetInput[] },
  ip: string | undefined,
  now = new Date(),
) {
  const dashboard = (
    await Dashboard.create({
      orgId: principal.orgId,
      name: input.name,
      description: input.description || null,
      widgets: widgetDocsOf(input.widgets),
      createdBy: principal.userId,
      createdAt: now,
      updatedAt: now,
    })
  ).toObject() as DashboardDoc;
  await auditAs(principal, ip)('dashboard.create', { type: 'dashboard', id: dashboard._id }, { name: dashboard.name });
  return dashboardJsonOf(dashboard);
}

export async function listDashboards(orgId: Types.ObjectId, query: z.infer<typeof listDashboardsQuery>) {
  const page = await paginate(Dashboard, { orgId }, { sortField: 'createdAt', direction: 1, limit: query.limit, cursor: query.cursor });
  return { data: (page.items as DashboardDoc[]).map(dashboardJsonOf), next_cursor: page.nextCursor };
}

const notResolved = (widget: WidgetJson): WidgetJson => ({
  ...widget,
  error: { code: 'not_resolved', message: `one request resolves at most ${MAX_RESOLVED_WIDGETS} widgets: ask for this one with ?resolve=true&widget=${widget.id}` },
});

/**
 * One dashboard; with `resolve`, each widget resolved also carries its view's answer for the caller:
 * the widgets named in `only`, else the first MAX_RESOLVED_WIDGETS (the rest say `not_resolved`).
 * Each widget resolved costs a rate-limit point, charged before any is resolved.
 */
export async function getDashboard(orgId: Types.ObjectId, dashboardId: string, resolve?: ViewResolver, only?: string[]): Promise<DashboardJson> {
  const dashboard = dashboardJsonOf(await findDashboard(orgId, dashboardId));
  if (!resolve) return dashboard;
  const asked = only ? dashboard.widgets.filter((widget) => only.includes(widget.id)) : dashboard.widgets;
  const resolving = new Set(asked.slice(0, MAX_RESOLVED_WIDGETS));
  await chargeWork(resolving.size);
  const widgets: WidgetJson[] = dashboard.widgets.map((widget) => (resolving.has(widget) || !asked.includes(widget) ? widget : notResolved(widget)));
  await inParallel(dashboard.widgets, PARALLEL_VIEWS, async (widget, i) => {
    if (!resolving.has(widget)) return;
    checkDeadline();
    widgets[i] = { ...widget, ...(await resolve(widget.query.view, widget.query.params as WidgetParams)) };
  });
  return { ...dashboard, widgets };
}

async function updateOne(principal: MemberPrincipal, dashboardId: string, set: Partial<Omit<DashboardDoc, '_id' | 'orgId'>>, action: string, ip: string | undefined) {
  const dashboard = await Dashboard.findOneAndUpdate({ _id: parseId(dashboardId, 'dashboard'), orgId: principal.orgId }, { $set: set }, { returnDocument: 'after' }).lean<DashboardDoc>();
  if (!dashboard) throw notFound('dashboard');
  await auditAs(principal, ip)(action, { type: 'dashboard', id: dashboard._id }, { name: dashboard.name });
  return dashboardJsonOf(dashboard);
}

export function updateDashboard(principal: MemberPrincipal, dashboardId: string, input: z.infer<typeof updateDashboardBody>, ip: string | undefined, now = new Date()) {
  return updateOne(
    principal,
    dashboardId,
    { ...(input.name !== undefined && { name: input.name }), ...(input.description !== undefined && { description: input.description || null }), updatedAt: now },
    'dashboard.update',
    ip,
  );
}

/** Replaces the whole widget set; the body was checked whole, so a bad widget changed nothing. */
export function replaceWidgets(principal: MemberPrincipal, dashboardId: string, widgets: WidgetInput[], ip: string | undefined, now = new Date()) {
  return updateOne(principal, dashboardId, { widgets: widgetDocsOf(widgets), updatedAt: now }, 'dashboard.widgets', ip);
}

export async function deleteDashboard(principal: MemberPrincipal, dashboardId: string, ip: string | undefined): Promise<void> {
  const dashboard = await Dashboard.findOneAndDelete({ _id: parseId(dashboardId, 'dashboard'), orgId: principal.orgId }).lean<DashboardDoc>();
  if (!dashboard) throw notFound('dashboard');
  await auditAs(principal, ip)('dashboard.delete', { type: 'dashboard', id: dashboard._id }, { name: dashboard.name });
}
