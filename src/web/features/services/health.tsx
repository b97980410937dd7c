import { formatDuration, formatPercent } from '../../lib/format';
import type { Service } from './api';

type Reason = Service['health']['reasons'][number];

const valueOf = (metric: Reason['metric'], value: number) => (metric === 'error_rate' ? formatPercent(value) : formatDuration(value));

/** One health rule in words: what was observed, the limit it crossed, and the baseline it was held to. */
export function describeReason(reason: Reason): string {
  const what = reason.metric === 'error_rate' ? 'Error rate' : 'p95 latency';
  const observed = valueOf(reason.metric, reason.observed);
  const threshold = valueOf(reason.metric, reason.threshold);
  if (reason.baseline === null) return `${what} ${observed} ≥ ${reason.status} threshold ${threshold}`;
  return `${what} ${observed} > ${threshold}, against ${valueOf(reason.metric, reason.baseline)} in the previous window`;
}

export function HealthBadge({ status }: { status: Service['health']['status'] }) {
  return <span className={`badge ${status}`}>{status}</span>;
}

/** The badge and every reason behind it; a healthy service says no rule was crossed. */
export function HealthSummary({ health }: { health: Service['health'] }) {
  return (
    <div className="service-health">
      <HealthBadge status={health.status} />
      {health.reasons.length === 0 ? (
        <span className="muted small">No health rule crossed</span>
      ) : (
        <ul className="small">
          {health.reasons.map((reason) => (
            <li key={reason.rule}>{describeReason(reason)}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
