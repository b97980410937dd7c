import { CodeBlock } from '../../components/CodeBlock';
import { CopyButton } from '../../components/CopyButton';
import type { CronCheck } from './api';
import { scheduleText } from './parts';
import type { Schedule } from './schedule';

/** The crontab fields of a schedule; an interval only when cron can say it (every 15 minutes, every 2 hours, daily…). */
function crontabFieldsOf(schedule: Schedule): string | undefined {
  if (schedule.type === 'crontab') return schedule.value;
  const { value, unit } = schedule;
  if (unit === 'minute' && 60 % value === 0) return value === 1 ? '* * * * *' : `*/${value} * * * *`;
  if (unit === 'hour' && 24 % value === 0) return value === 1 ? '0 * * * *' : `0 */${value} * * *`;
  if (value === 1) return { day: '0 0 * * *', week: '0 0 * * 0', month: '0 0 1 * *' }[unit as 'day' | 'week' | 'month'];
  return undefined;
}

/** curl as a crontab line should call it: quiet, failing on HTTP errors, bounded, retried. */
const curl = (url: string) => `curl -fsS -m 10 --retry 3 -o /dev/null ${url}`;

/**
 * The ping URL with a copy button, and the lines to paste: a crontab entry that signals the start and
 * then the job's exit status (0 is a success, anything else a failure), and each signal on its own.
 */
export function PingSetup({ check }: { check: CronCheck }) {
  const url = check.ping_url;
  const fields = crontabFieldsOf(check.schedule);
  const crontab = [
    ...(check.timezone !== 'UTC' ? [`# the schedule is read in ${check.timezone}: cronie takes CRON_TZ, other crons run in the system's zone`, `CRON_TZ=${check.timezone}`] : []),
    ...(fields ? [] : [`# ${scheduleText(check.schedule)}: put your job's schedule in place of <schedule>`]),
    `${fields ?? '<schedule>'} ${curl(`${url}/start`)}; /path/to/job.sh; ${curl(`${url}/$?`)}`,
  ].join('\n');
  const signals = [`# the job started: a run with no end after ${check.max_runtime} min is timed out`, curl(`${url}/start`), '# it succeeded', curl(url), '# it failed', curl(`${url}/fail`)].join('\n');
  return (
    <section className="panel ping-setup" aria-labelledby="ping-url-heading">
      <h2 id="ping-url-heading">Ping URL and crontab line</h2>
      <p className="small muted">Your job calls this URL (GET or POST) when it runs. The token in it is the only credential: keep it out of public logs.</p>
      <div className="dsn">
        <code aria-label="Ping URL">{url}</code>
        <CopyButton text={url} label="Copy ping URL" />
      </div>
      <h3>In a crontab</h3>
      <p className="small muted">
        Signals the start, runs the job, then sends its exit status: <code>/0</code> is a success, anything else a failure.
      </p>
      <CodeBlock label="crontab line" code={crontab} />
      <h3>Each signal on its own</h3>
      <CodeBlock label="curl lines" code={signals} />
    </section>
  );
}
