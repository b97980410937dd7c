import type { ReactNode } from 'react';
import type { UseQueryResult } from '@tanstack/react-query';
import { ApiError } from '../api/client';

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p className="loading" role="status" aria-live="polite">
      {label}
    </p>
  );
}

/** The API's own message for a refused request, with its code and request id for a bug report. */
export function ErrorNotice({ error, title = 'The request failed' }: { error: unknown; title?: string }) {
  const apiError = error instanceof ApiError ? error : undefined;
  return (
    <div className="notice error" role="alert">
      <strong>{title}:</strong> {error instanceof Error ? error.message : String(error)}
      {apiError && apiError.code !== 'network_error' && (
        <div className="small muted">
          {apiError.code} · HTTP {apiError.status}
          {apiError.requestId && <> · request {apiError.requestId}</>}
        </div>
      )}
      {apiError?.details?.length ? (
        <ul className="small">
          {apiError.details.map((detail, index) => (
            <li key={index}>
              {detail.path}: {detail.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty-state">
      <h2>{title}</h2>
      {children}
    </div>
  );
}

/** A query's loading and error states, then its data; `isEmpty` picks the empty state instead. */
export function QueryView<T>({
  query,
  children,
  isEmpty,
  empty,
  loadingLabel,
}: {
  query: UseQueryResult<T>;
  children: (data: T) => ReactNode;
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
  loadingLabel?: string;
}) {
  if (query.isPending) return <Loading label={loadingLabel} />;
  if (query.isError) return <ErrorNotice error={query.error} />;
  if (isEmpty?.(query.data) && empty) return <>{empty}</>;
  return <>{children(query.data)}</>;
}
