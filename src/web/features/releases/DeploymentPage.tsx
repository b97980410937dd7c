import type { ReactNode } from 'react';
import { Link, useParams } from 'react-router';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, ErrorNotice, QueryView } from '../../components/states';
import { Table } from '../../components/Table';
import { formatCount, formatTime, timeZone } from '../../lib/format';
import { useQueryParams } from '../../lib/url-state';
import { useDeployment, useDeploymentHealth, type Deployment, type Health } from './api';
import { CommitLink, useProjectNames, VerdictBadge } from './parts';
import './releases.css';
import { FormField } from '../../components/FormField';

const DEFAULT_WINDOW = 60;
const WINDOW_CHOICES = [15, 30, 60, 120, 240, 720, 1440];

/**
 * A number exactly as the API answered it: grouped for reading, never rounded (a very small p-value in
 * exponent form, as the API's own reasons write it).
 */
const plain = new Intl.NumberFormat(undefined, { maximumFractionDigits: 20 });
const exact = (value: number | null | undefined) => (value == null ? '—' : value !== 0 && Math.abs(value) < 1e-4 ? value.toExponential() : plain.format(value));

const TESTS: Record<NonNullable<Health['error_rate']['test']>, string> = {
  two_proportion_z: 'Two-proportion z-test, pooled, one-sided',
  poisson_exact: 'Exact comparison of two Poisson rates, one-sided',
};

/** `?window=` minutes on each side (5 to 1,440), else the API's 60. */
function useWindow(): [number, (minutes: number) => void] {
  const { get, update } = useQueryParams();
  const asked = Number(get('window'));
  const minutes = Number.isInteger(asked) && asked >= 5 && asked <= 1440 ? asked : DEFAULT_WINDOW;
  return [minutes, (next) => update({ window: next === DEFAULT_WINDOW ? undefined : String(next) })];
}

const Time = ({ at }: { at: string }) => <time dateTime={at}>{formatTime(at)}</time>;

/** A window's bounds; the end as a time of day alone when it falls on the start's day. */
function WindowSpan({ from, to }: { from: string; to: string }) {
  const sameDay = new Date(from).toDateString() === new Date(to).toDateString();
  return (
    <>
      <Time at={from} /> – <time dateTime={to}>{formatTime(to, sameDay ? 'time' : 'full')}</time>
    </>
  );
}

function DeploymentFacts({ deployment }: { deployment: Deployment }) {
  const projectName = useProjectNames();
  return (
    <section className="panel" aria-labelledby="deployment-facts">
      <h2 id="deployment-facts">Deployment</h2>
      <dl className="deployment-facts">
        <div>
          <dt>Release</dt>
          <dd>
            <span className="mono wrap-anywhere">{deployment.version}</span> · <Link to={`/releases?version=${encodeURIComponent(deployment.version)}`}>its deployments</Link> ·{' '}
            <Link to={`/issues?project=${deployment.project_id}&release=${encodeURIComponent(deployment.version)}`}>its issues</Link>
          </dd>
        </div>
        <div>
          <dt>Environment</dt>
          <dd>{deployment.environment}</dd>
        </div>
        <div>
          <dt>Project</dt>
          <dd className="wrap-anywhere">{projectName(deployment.project_id)}</dd>
        </div>
        <div>
          <dt>Deployed at</dt>
          <dd>
            <Time at={deployment.deployed_at} /> <span className="small muted">({timeZone()})</span>
          </dd>
        </div>
        <div>
          <dt>Commit</dt>
          <dd>
            <CommitLink sha={deployment.commit_sha} url={deployment.commit_url} repository={deployment.repository} />
            {deployment.commit_sha && !deployment.commit_url && <div className="small muted">Connect the project to its repository (Settings, Integrations) to link commits.</div>}
          </dd>
        </div>
        <div>
          <dt>CI run</dt>
          <dd className="wrap-anywhere">
            {deployment.url ? (
              <a href={deployment.url} target="_blank" rel="noreferrer noopener">
                {deployment.url}
              </a>
            ) : (
              '—'
            )}
          </dd>
        </div>
        <div>
          <dt>Recorded</dt>
          <dd>
            <Time at={deployment.created_at} />
          </dd>
        </div>
        <div>
          <dt>Evaluator's verdict</dt>
          <dd>
            <VerdictBadge verdict={deployment.verdict} pendingLabel="not yet: judged once the 60 minutes after the deployment have passed" />
          </dd>
        </div>
      </dl>
    </section>
  );
}

interface Row {
  label: ReactNode;
  before: ReactNode;
  after: ReactNode;
}
interface SharedRow {
  label: ReactNode;
  value: ReactNode;
}
interface Judged {
  difference: number | null;
  test: Health['error_rate']['test'];
  statistic: number | null;
  p_value: number | null;
  minimum_sample: number;
  verdict: Health['verdict'];
  rule: string;
}

/** The rows every metric shares below its counts: difference, test, statistic, p-value, minimum sample, verdict, rule. */
function judgedRows(metric: Judged, unit: string, difference: ReactNode): SharedRow[] {
  return [
    { label: 'Difference (after − before)', value: difference },
    {
      label: 'Test',
      value: metric.test ? (
        <>
          {TESTS[metric.test]} <code className="small muted">{metric.test}</code>
        </>
      ) : (
        <span className="muted">not run: a window is below the minimum sample</span>
      ),
    },
    {
      label: 'Statistic',
      value: metric.statistic === null ? '—' : metric.test === 'two_proportion_z' ? `z = ${exact(metric.statistic)}` : `${exact(metric.statistic)} (the count after)`,
    },
    { label: 'p-value (one-sided)', value: exact(metric.p_value) },
    { label: 'Minimum sample', value: `${formatCount(metric.minimum_sample)} ${unit} in each window` },
    { label: 'Verdict', value: <VerdictBadge verdict={metric.verdict} /> },
    { label: 'Rule', value: <span className="rule">{metric.rule}</span> },
  ];
}

/**
 * One metric's arithmetic as a table a reviewer can redo by hand: the counts of each window side by side,
 * then the difference, the test and the verdict with the API's rule.
 */
function ArithmeticTable({ id, title, caption, health, rows, shared }: { id: string; title: string; caption: string; health: Health; rows: Row[]; shared: SharedRow[] }) {
  const windowHead = (name: string, side: { from: string; to: string }) => (
    <th scope="col" className="number">
      {name}
      <span className="window-span">
        <WindowSpan {...side} />
      </span>
    </th>
  );
  return (
    <section className="panel metric" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      <div className="table-wrap">
        <table className="arithmetic">
          <caption>{caption}</caption>
          <thead>
            <tr>
              <th scope="col">Figure</th>
              {windowHead('Before', health.before)}
              {windowHead('After', health.after)}
            </tr>
          </thead>
          <tbody>
            {rows.map((row, index) => (
              <tr key={`window-${index}`}>
                <th scope="row">{row.label}</th>
                <td className="number">{row.before}</td>
                <td className="number">{row.after}</td>
              </tr>
            ))}
            {shared.map((row, index) => (
              <tr key={`shared-${index}`} className="shared">
                <th scope="row">{row.label}</th>
                <td colSpan={2}>{row.value}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

const reached = (count: number, minimum: number) => (count >= minimum ? 'yes' : 'no');
/** A rate as answered, with its percentage beside it for reading. */
const rate = (value: number | null) => (value === null ? '—' : `${exact(value)} (${exact(Number((value * 100).toPrecision(12)))} %)`);

function ErrorRate({ health }: { health: Health }) {
  const metric = health.error_rate;
  const unit = metric.denominator;
  const total = (side: Health['error_rate']['before']) => side[unit] ?? 0;
  return (
    <ArithmeticTable
      id="metric-error-rate"
      title="Error rate"
      caption={`Error events per ${unit === 'requests' ? 'request (entry spans of the project’s services)' : 'session (the project sends no spans)'} in each window.`}
      health={health}
      rows={[
        { label: 'Errors', before: formatCount(metric.before.errors), after: formatCount(metric.after.errors) },
        { label: unit === 'requests' ? 'Requests' : 'Sessions', before: formatCount(total(metric.before)), after: formatCount(total(metric.after)) },
        { label: `Error rate (errors ÷ ${unit})`, before: rate(metric.before.rate), after: rate(metric.after.rate) },
        { label: `Minimum sample reached (${formatCount(metric.minimum_sample)} ${unit})`, before: reached(total(metric.before), metric.minimum_sample), after: reached(total(metric.after), metric.minimum_sample) },
      ]}
      shared={judgedRows(metric, unit, exact(metric.difference))}
    />
  );
}

function P95Latency({ health }: { health: Health }) {
  const metric = health.p95_latency;
  const ms = (value: number | null) => (value === null ? '—' : `${exact(value)} ms`);
  return (
    <ArithmeticTable
      id="metric-p95"
      title="p95 latency"
      caption="The 95th percentile of request durations in each window (from the rollups' histograms, ±5 %). The test compares the share of requests slower than the before window's p95."
      health={health}
      rows={[
        { label: 'Requests', before: formatCount(metric.before.requests), after: formatCount(metric.after.requests) },
        { label: 'p95', before: ms(metric.before.p95_ms), after: ms(metric.after.p95_ms) },
        { label: 'Slower than the threshold', before: formatCount(metric.before.slower), after: formatCount(metric.after.slower) },
        { label: 'Share slower (slower ÷ requests)', before: rate(metric.before.rate), after: rate(metric.after.rate) },
        { label: `Minimum sample reached (${formatCount(metric.minimum_sample)} requests)`, before: reached(metric.before.requests, metric.minimum_sample), after: reached(metric.after.requests, metric.minimum_sample) },
      ]}
      shared={[{ label: "Threshold (the before window's p95)", value: ms(metric.threshold_ms) }, ...judgedRows(metric, 'requests', ms(metric.difference))]}
    />
  );
}

function CrashFree({ health }: { health: Health }) {
  const metric = health.crash_free_sessions;
  if (!metric) {
    return (
      <section className="panel metric" aria-labelledby="metric-crash-free">
        <h2 id="metric-crash-free">Crash-free sessions</h2>
        <p className="muted small">No session started in either window, so crash-free sessions are not judged. SDKs send sessions when release health is on (Sentry's autoSessionTracking).</p>
      </section>
    );
  }
  return (
    <ArithmeticTable
      id="metric-crash-free"
      title="Crash-free sessions"
      caption="Sessions started in each window and how many of them crashed."
      health={health}
      rows={[
        { label: 'Sessions', before: formatCount(metric.before.sessions), after: formatCount(metric.after.sessions) },
        { label: 'Crashed', before: formatCount(metric.before.crashed), after: formatCount(metric.after.crashed) },
        { label: 'Crash-free rate (1 − crashed ÷ sessions)', before: rate(metric.before.crash_free_rate), after: rate(metric.after.crash_free_rate) },
        { label: `Minimum sample reached (${formatCount(metric.minimum_sample)} sessions)`, before: reached(metric.before.sessions, metric.minimum_sample), after: reached(metric.after.sessions, metric.minimum_sample) },
      ]}
      shared={judgedRows(metric, 'sessions', exact(metric.difference))}
    />
  );
}

function Verdict({ health, asked }: { health: Health; asked: number }) {
  return (
    <section className={`panel verdict-panel ${health.verdict}`} aria-labelledby="overall-verdict">
      <div className="panel-head">
        <h2 id="overall-verdict">
          Verdict: <VerdictBadge verdict={health.verdict} />
        </h2>
      </div>
      <ul className="reasons">
        {health.reasons.map((reason, index) => (
          <li key={index}>{reason}</li>
        ))}
      </ul>
      <p className="small muted">
        Degraded when any metric below is degraded; healthy when at least one could be judged and none is; otherwise insufficient data. New issues are listed but do not decide it.
      </p>
      <p className="small">
        Compared {exact(health.window_minutes)} minutes on each side: before <Time at={health.before.from} /> – <Time at={health.before.to} />, after <Time at={health.after.from} /> – <Time at={health.after.to} /> ({timeZone()}).
        {health.window_minutes < asked && <> The after window has not ended yet, so both are cut to the time since the deployment.</>}
      </p>
    </section>
  );
}

function ReadingGuide() {
  return (
    <section className="panel" aria-labelledby="reading-guide">
      <h2 id="reading-guide">How to read the tables</h2>
      <dl className="guide">
        <div>
          <dt>Before, After</dt>
          <dd>Two windows of equal length just before and just after the deployment, counted over the project's whole traffic in its environment (every release).</dd>
        </div>
        <div>
          <dt>Counts and rates</dt>
          <dd>What was counted in each window; a rate is its count divided by the window's requests or sessions.</dd>
        </div>
        <div>
          <dt>Difference</dt>
          <dd>The after figure minus the before figure.</dd>
        </div>
        <div>
          <dt>Test, statistic</dt>
          <dd>Whether the rate after is higher, one-sided: the two-proportion z-test on the pooled rate when every cell expects at least 5, otherwise the exact comparison of two Poisson rates, whose statistic is the count after.</dd>
        </div>
        <div>
          <dt>p-value</dt>
          <dd>The chance of a rise at least this large if the deployment changed nothing; below 0.05 is significant.</dd>
        </div>
        <div>
          <dt>Minimum sample</dt>
          <dd>A metric is judged only when each window holds at least this many requests or sessions; otherwise its verdict is insufficient data.</dd>
        </div>
        <div>
          <dt>Verdict, rule</dt>
          <dd>The rule, in the API's words, says when a metric is degraded: a significant rise that is also large enough to matter.</dd>
        </div>
      </dl>
      <p className="small muted">Every figure is shown as the API computed it; rates carry their percentage for reading.</p>
    </section>
  );
}

function NewIssues({ health }: { health: Health }) {
  return (
    <section className="panel" aria-labelledby="new-issues">
      <h2 id="new-issues">New issues since the deployment</h2>
      {health.new_issues.length === 0 ? (
        <p className="muted small">
          No issue was first seen in {health.version} after this deployment in this project.
        </p>
      ) : (
        <Table
          caption={`Issues first seen in ${health.version} after the deployment`}
          captionHidden
          rows={health.new_issues}
          rowKey={(issue) => issue.id}
          columns={[
            { header: 'Issue', cell: (issue) => <Link to={`/issues/${issue.id}`} className="wrap-anywhere">{issue.title}</Link> },
            { header: 'First seen', cell: (issue) => <span className="nowrap"><Time at={issue.first_seen} /></span> },
            { header: 'Events', numeric: true, cell: (issue) => formatCount(issue.count) },
          ]}
        />
      )}
    </section>
  );
}

function WindowChoice() {
  const [minutes, choose] = useWindow();
  const choices = WINDOW_CHOICES.includes(minutes) ? WINDOW_CHOICES : [...WINDOW_CHOICES, minutes].sort((a, b) => a - b);
  return (
    <div className="toolbar">
      <FormField label="Minutes compared on each side">
        {(control) => (
          <select {...control} value={minutes} onChange={(event) => choose(Number(event.target.value))}>
            {choices.map((choice) => (
              <option key={choice} value={choice}>
                {choice === DEFAULT_WINDOW ? `${choice} (the evaluator's)` : choice}
              </option>
            ))}
          </select>
        )}
      </FormField>
    </div>
  );
}

function HealthReport({ deploymentId }: { deploymentId: string }) {
  const [minutes] = useWindow();
  const health = useDeploymentHealth(deploymentId, minutes === DEFAULT_WINDOW ? undefined : minutes);
  return (
    <QueryView query={health} loadingLabel="Computing the deployment's health…">
      {(answer) => (
        <div className={health.isPlaceholderData ? 'health-report stale' : 'health-report'} aria-busy={health.isPlaceholderData}>
          <Verdict health={answer} asked={minutes} />
          <ReadingGuide />
          <ErrorRate health={answer} />
          <P95Latency health={answer} />
          <CrashFree health={answer} />
          <NewIssues health={answer} />
        </div>
      )}
    </QueryView>
  );
}

/** One deployment and its health, laid out so a reviewer can check the arithmetic by hand. */
export default function DeploymentPage() {
  const { deploymentId = '' } = useParams();
  const deployment = useDeployment(deploymentId);
  const projectName = useProjectNames();
  if (deployment.isError) {
    return (
      <>
        <PageHeader title="Deployment health" />
        <ErrorNotice error={deployment.error} title="The deployment did not load" />
        <EmptyState title="Nothing to show">
          <p>
            <Link to="/releases">Back to the releases</Link>
          </p>
        </EmptyState>
      </>
    );
  }
  return (
    <QueryView query={deployment} loadingLabel="Loading the deployment…">
      {(data) => (
        <>
          <PageHeader
            title={`Deployment health: ${data.version}`}
            description={`${data.environment} · ${projectName(data.project_id)} · deployed ${formatTime(data.deployed_at)} (${timeZone()})`}
            actions={<Link to="/releases">All releases</Link>}
          />
          <DeploymentFacts deployment={data} />
          <WindowChoice />
          <HealthReport deploymentId={deploymentId} />
        </>
      )}
    </QueryView>
  );
}
