import { formatAgo, formatTime, timeZone } from '../../lib/format';

/** The level as the SDK sent it; the shared badge colours error, fatal, warning and info. */
export const LevelBadge = ({ level }: { level: string }) => <span className={`badge ${level}`}>{level}</span>;

export const StatusBadge = ({ status }: { status: 'unresolved' | 'resolved' | 'ignored' }) => <span className={`badge ${status}`}>{status}</span>;

/** "3 minutes ago", with the exact time and its zone on hover. */
export const SeenAt = ({ time }: { time: string }) => (
  <time dateTime={time} title={`${formatTime(time)} (${timeZone()})`} className="nowrap">
    {formatAgo(time)}
  </time>
);
