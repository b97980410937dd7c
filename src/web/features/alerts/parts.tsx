import type { ReactNode } from 'react';
import { formatTime, timeZone } from '../../lib/format';
import type { Alert, Delivery, Destination } from './api';

/** Every alert kind the API raises, in a person's words; a Record, so a new kind breaks the typecheck until it is named here. */
export const KIND_LABELS: Record<Alert['kind'], string> = {
  'issue.new': 'New issue',
  'issue.regression': 'Issue regression',
  'cron.down': 'Cron check down',
  'uptime.down': 'Uptime monitor down',
  'uptime.tls_expiring': 'TLS certificate expiring',
  anomaly: 'Metric anomaly',
  'endpoint.surge': 'Endpoint surge',
  'log.surge': 'Log surge',
  'deployment.degraded': 'Deployment degraded',
};

export const ALERT_KINDS = Object.keys(KIND_LABELS) as Array<Alert['kind']>;

/** A URL value the API accepts for an enumerated parameter, or nothing (a hand-edited URL may hold anything). */
export const oneOf = <T extends string>(allowed: readonly T[], value: string | undefined): T | undefined => allowed.find((item) => item === value);

export const DESTINATION_TYPES: Record<Destination['type'], string> = { email: 'Email', webhook: 'Webhook', slack: 'Slack' };

/** Where the dashboard shows what an alert is about, by the API's subject type; undefined when no page does. */
export function subjectPath(subject: Alert['subject']): string | undefined {
  const id = encodeURIComponent(subject.id);
  switch (subject.type) {
    case 'issue':
      return `/issues/${id}`;
    case 'cron_check':
      return `/monitors/cron/${id}`;
    case 'uptime_monitor':
      return `/monitors/uptime/${id}`;
    case 'deployment':
      return `/deployments/${id}`;
    case 'anomaly':
      return '/anomalies';
    case 'endpoint':
      return '/performance';
    case 'log_pattern':
      return '/logs/patterns';
    case 'service':
      return `/services/${id}`;
    default:
      return undefined;
  }
}

const STATUS_TONES: Record<Alert['status'] | Delivery['status'], string> = {
  open: 'error',
  resolved: 'resolved',
  pending: '',
  retrying: 'warning',
  sent: 'ok',
  failed: 'error',
};

export const StatusBadge = ({ status }: { status: Alert['status'] | Delivery['status'] }) => <span className={`badge ${STATUS_TONES[status]}`}>{status}</span>;

/** An exact time in the browser's zone, which the title names. */
export const TimeAt = ({ time, fallback = '—' }: { time: string | null; fallback?: ReactNode }) =>
  time ? (
    <time dateTime={time} title={`${formatTime(time)} (${timeZone()})`} className="nowrap">
      {formatTime(time)}
    </time>
  ) : (
    <>{fallback}</>
  );

/** A destination in a few words: its name, else its type and where it sends. */
export function destinationLabel(destination: Destination): string {
  const target = destination.type === 'email' ? (destination.emails ?? []).join(', ') : (destination.url ?? '');
  return destination.name ? `${destination.name} (${DESTINATION_TYPES[destination.type]})` : `${DESTINATION_TYPES[destination.type]}: ${target}`;
}
