import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, read, type AnswerOf, type BodyOf } from '../../api/client';

export type Dashboard = AnswerOf<'/v1/dashboards/{dashboardID}'>;
export type Widget = Dashboard['widgets'][number];
export type WidgetType = Widget['type'];
export type Layout = Widget['layout'];
/** A widget as `PUT /v1/dashboards/{id}/widgets` takes it: no id for a new one, no title for a derived one. */
export type WidgetInput = BodyOf<'/v1/dashboards/{dashboardID}/widgets', 'put'>['widgets'][number];
/** The read views a widget may show, as the API names them. */
export type ViewName = WidgetInput['query']['view'];
export type WidgetParams = NonNullable<WidgetInput['query']['params']>;

/** Dashboards per page of the list: the API's largest page, so most organisations see all of theirs at once. */
const LIST_PAGE = 200;

export const useDashboards = (cursor: string | undefined) =>
  useQuery({
    queryKey: ['dashboards', 'list', cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/dashboards', { params: { query: { limit: LIST_PAGE, cursor } }, signal })),
    placeholderData: keepPreviousData,
  });

/** One dashboard with its widgets as saved; each widget reads its own view (see views.tsx). */
export const useDashboard = (dashboardID: string) =>
  useQuery({
    queryKey: ['dashboards', 'one', dashboardID],
    queryFn: ({ signal }) => read(api().GET('/v1/dashboards/{dashboardID}', { params: { path: { dashboardID } }, signal })),
  });

export function useCreateDashboard() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: BodyOf<'/v1/dashboards', 'post'>) => read(api().POST('/v1/dashboards', { body })),
    onSuccess: (dashboard) => {
      queryClient.setQueryData(['dashboards', 'one', dashboard.id], dashboard);
      return queryClient.invalidateQueries({ queryKey: ['dashboards', 'list'] });
    },
  });
}

/** What every change to one dashboard answers: the dashboard as stored, shown at once and in the list. */
function useStoreAnswer() {
  const queryClient = useQueryClient();
  return (dashboard: Dashboard) => {
    queryClient.setQueryData(['dashboards', 'one', dashboard.id], dashboard);
    return queryClient.invalidateQueries({ queryKey: ['dashboards', 'list'] });
  };
}

/** Rename, or change the description (null clears it). */
export function useUpdateDashboard(dashboardID: string) {
  const stored = useStoreAnswer();
  return useMutation({
    mutationFn: (body: BodyOf<'/v1/dashboards/{dashboardID}', 'patch'>) => read(api().PATCH('/v1/dashboards/{dashboardID}', { params: { path: { dashboardID } }, body })),
    onSuccess: stored,
  });
}

/** The whole widget set in one request: the API keeps all of it or, when one widget is invalid, none. */
export function useReplaceWidgets(dashboardID: string) {
  const stored = useStoreAnswer();
  return useMutation({
    mutationFn: (widgets: WidgetInput[]) => read(api().PUT('/v1/dashboards/{dashboardID}/widgets', { params: { path: { dashboardID } }, body: { widgets } })),
    onSuccess: stored,
  });
}

export function useDeleteDashboard() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (dashboardID: string) => read(api().DELETE('/v1/dashboards/{dashboardID}', { params: { path: { dashboardID } } })),
    onSuccess: (_answer, dashboardID) => {
      queryClient.removeQueries({ queryKey: ['dashboards', 'one', dashboardID] });
      return queryClient.invalidateQueries({ queryKey: ['dashboards', 'list'] });
    },
  });
}
