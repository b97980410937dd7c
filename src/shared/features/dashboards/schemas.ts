import { z } from 'zod';
import { pageQuery } from '../../paging.js';
import { repeatedParameter } from '../../views.js';

export const widgetTypes = ['timeseries', 'number', 'table', 'list'] as const;
/** Columns of the layout grid, as Grafana and Datadog use. */
export const GRID_COLUMNS = 12;
export const MAX_WIDGETS = 50;
/** Widgets one `?resolve=true` request resolves, at most: each runs a view, and a request has a deadline. */
export const MAX_RESOLVED_WIDGETS = 12;
/** Rows a widget may start at or span: room for every widget stacked, nothing a screen can't scroll. */
const MAX_ROW = 10_000;
const MAX_HEIGHT = 100;
const MAX_PARAMS = 32;

/**
 * The read views a widget may show, by name, and what checks a widget's parameters against a
 * view: the API supplies both from its own route definitions, so a widget obeys exactly the rules
 * of calling the view.
 */
export interface ViewCatalog {
  names: readonly [string, ...string[]];
  /** The view's name in words, which a widget without a title is named after ("Issues", "Metric"). */
  label(view: string): string;
  /** Problems of `params` under the named view's query rules; paths are relative to `params`. */
  paramsProblems(view: string, params: QueryValues): { path: PropertyKey[]; message: string }[];
}

/** Query parameters as a URL delivers them: text, or a list of texts for a repeated parameter. */
export type QueryValues = Record<string, string | string[]>;

const paramValue = z.union([z.string().max(2048), z.number(), z.boolean()]);
/** A view's query parameters; numbers and booleans are taken as their text, as in a URL. */
export const widgetParams = z
  .record(z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, 'a query parameter name'), z.union([paramValue, z.array(paramValue).max(100)]))
  .refine((params) => Object.keys(params).length <= MAX_PARAMS, `at most ${MAX_PARAMS} parameters`);
export type WidgetParams = z.infer<typeof widgetParams>;

/** The parameters as the view's route would receive them in its query string. */
export const asQueryValues = (params: WidgetParams): QueryValues =>
  Object.fromEntries(Object.entries(params).map(([key, value]) => [key, Array.isArray(value) ? value.map(String) : String(value)]));

export const layoutSchema = z
  .object({
    x: z.number().int().min(0).max(GRID_COLUMNS - 1),
    y: z.number().int().min(0).max(MAX_ROW),
    w: z.number().int().min(1).max(GRID_COLUMNS),
    h: z.number().int().min(1).max(MAX_HEIGHT),
  })
  .strict()
  .refine((layout) => layout.x + layout.w <= GRID_COLUMNS, `x + w must be at most ${GRID_COLUMNS}: the grid has ${GRID_COLUMNS} columns`)
  .meta({ description: `Place on a ${GRID_COLUMNS}-column grid: column x, row y, w columns wide, h rows high.` });
type Layout = z.infer<typeof layoutSchema>;

const overlaps = (a: Layout, b: Layout) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

const MAX_TITLE = 200;
/** Parameters that say where, when or in what order a view looks, not what it shows: a derived title leaves them out. */
const PLACING_PARAMS = new Set(['project', 'from', 'to', 'limit', 'cursor', 'step', 'sort']);

/**
 * A widget's title when none is given: the view's label, then the values of its other parameters in the
 * order given, separated by " · " (a list's values by ", "): "Issues: unresolved", "Metric: queue.depth · max".
 * Cut to 200 characters, as a given title.
 */
export function derivedTitle(label: string, params: WidgetParams): string {
  const values = Object.entries(params)
    .filter(([key]) => !PLACING_PARAMS.has(key))
    .map(([, value]) => (Array.isArray(value) ? value.join(', ') : String(value)))
    .filter((value) => value.trim() !== '');
  const title = values.length ? `${label}: ${values.join(' · ')}` : label;
  if (title.length <= MAX_TITLE) return title;
  // never split a character written as two UTF-16 units
  const cut = title.slice(0, MAX_TITLE - 1).replace(/[\uD800-\uDBFF]$/, '');
  return `${cut}…`;
}

const widgetId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, - and _ (up to 64)');

/** Request schemas whose widget queries are checked against `catalog`. */
export function dashboardBodies(catalog: ViewCatalog) {
  const widgetQuery = z
    .object({
      view: z.enum(catalog.names).meta({ description: 'The read view the widget shows (see docs/api.md "Dashboards").' }),
      params: widgetParams.default({}).meta({ description: "The view's query parameters, checked by the view's own rules." }),
    })
    .strict()
    .superRefine((query, ctx) => {
      for (const problem of catalog.paramsProblems(query.view, asQueryValues(query.params))) {
        ctx.addIssue({ code: 'custom', message: problem.message, path: ['params', ...problem.path] });
      }
    });
  const widgetInput = z
    .object({
      /** Kept when given, so a client can PUT back what it read; assigned when absent. */
      id: widgetId.optional(),
      title: z
        .string()
        .trim()
        .min(1)
        .max(MAX_TITLE)
        .optional()
        .meta({ description: 'Shown above the widget. When absent: the view\'s label, then the values of its parameters other than project, from, to, limit, cursor, step and sort, in the order given ("Issues: unresolved", "Metric: queue.depth · max"), stored as its title.' }),
      type: z.enum(widgetTypes),
      query: widgetQuery,
      layout: layoutSchema,
    })
    .strict()
    .transform((widget) => ({ ...widget, title: widget.title ?? derivedTitle(catalog.label(widget.query.view), widget.query.params) }));
  const widgets = z
    .array(widgetInput)
    .max(MAX_WIDGETS)
    .superRefine((list, ctx) => {
      const ids = new Map<string, number>();
      list.forEach((widget, i) => {
        if (widget.id !== undefined) {
          const first = ids.get(widget.id);
          if (first !== undefined) ctx.addIssue({ code: 'custom', message: `the same id as widget ${first}`, path: [i, 'id'] });
          else ids.set(widget.id, i);
        }
        const other = list.findIndex((earlier, j) => j < i && overlaps(earlier.layout, widget.layout));
        if (other !== -1) ctx.addIssue({ code: 'custom', message: `overlaps widget ${other}`, path: [i, 'layout'] });
      });
    });
  return {
    createDashboardBody: z
      .object({
        name: z.string().trim().min(1).max(200),
        description: z.string().trim().max(2000).nullable().optional(),
        widgets: widgets.default([]),
      })
      .strict(),
    replaceWidgetsBody: z.object({ widgets }).strict(),
  };
}
export type DashboardBodies = ReturnType<typeof dashboardBodies>;
export type WidgetInput = z.output<DashboardBodies['replaceWidgetsBody']>['widgets'][number];

export const updateDashboardBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    /** null clears it. */
    description: z.string().trim().max(2000).nullable(),
  })
  .partial()
  .strict();

export const listDashboardsQuery = z.object(pageQuery);

export const getDashboardQuery = z.object({
  resolve: z
    .enum(['true', 'false'])
    .default('false')
    .meta({ description: `With true, each widget resolved (the first ${MAX_RESOLVED_WIDGETS}, or those named by \`widget\`) also carries \`data\`, its view's answer, or \`error\`; widgets past the first ${MAX_RESOLVED_WIDGETS} carry the error \`not_resolved\`.` }),
  widget: repeatedParameter
    .refine((ids) => !ids || ids.length <= MAX_RESOLVED_WIDGETS, `at most ${MAX_RESOLVED_WIDGETS} widgets per request`)
    .meta({ description: `With resolve=true, resolve only these widgets (ids, repeatable, at most ${MAX_RESOLVED_WIDGETS}); the others come back unresolved.` }),
});

export const widgetError = z.object({ code: z.string(), message: z.string() });

export const widgetJson = z.object({
  id: z.string(),
  title: z.string(),
  type: z.enum(widgetTypes),
  query: z.object({ view: z.string(), params: z.record(z.string(), z.unknown()) }),
  layout: z.object({ x: z.number().int(), y: z.number().int(), w: z.number().int(), h: z.number().int() }),
  /** With ?resolve=true: the view's answer, exactly as GET on the view's route with these params. */
  data: z.unknown().optional(),
  /** With ?resolve=true, when the view refused: its error code and message; `not_resolved` past the widgets one request resolves. */
  error: widgetError.optional(),
});

export const dashboardJson = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  widgets: z.array(widgetJson),
  created_at: z.string(),
  updated_at: z.string(),
  /** The user who created it (for an API key, the key's owner). */
  created_by: z.string().nullable(),
});
