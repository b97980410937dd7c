import { CodeBlock } from '../../components/CodeBlock';
import { ErrorNotice, Loading } from '../../components/states';
import { formatCount, formatTime } from '../../lib/format';
import { useCan } from '../auth/permissions';
import { useInvestigateIssue, useIssueInvestigation, type Investigation as InvestigationAnswer } from './api';
import { SeenAt } from './parts';
import './investigation.css';

/** "related_traces" → "Related traces": the evidence's own keys, read aloud. */
const labelOf = (key: string) => key.charAt(0).toUpperCase() + key.slice(1).replaceAll('_', ' ');

const isEmpty = (value: unknown) => value == null || (Array.isArray(value) && value.length === 0);

/** How much a piece of evidence holds, for its folded heading: a list's length, or "empty" when nothing was found. */
function sizeOf(value: unknown): string {
  if (isEmpty(value) || (value && typeof value === 'object' && !Array.isArray(value) && Object.values(value).every(isEmpty))) return 'empty';
  if (Array.isArray(value)) return value.length === 1 ? '1 item' : `${formatCount(value.length)} items`;
  return '';
}

/** What our code gathered and the model was shown, exactly as stored: one folded block per part. */
function Evidence({ evidence }: { evidence: NonNullable<InvestigationAnswer['evidence']> }) {
  return (
    <section className="investigation-evidence" aria-labelledby="investigation-evidence">
      <h3 id="investigation-evidence">Evidence shown to the model</h3>
      <p className="small muted">Gathered by Sluice from its own data before the model was asked, and stored with the answer.</p>
      {Object.entries(evidence).map(([key, value]) => (
        <details key={key}>
          <summary>
            <span>{labelOf(key)}</span> <span className="small muted">{sizeOf(value)}</span>
          </summary>
          <CodeBlock code={JSON.stringify(value, null, 2)} label={`${labelOf(key)} evidence`} />
        </details>
      ))}
    </section>
  );
}

function Answer({ investigation }: { investigation: InvestigationAnswer }) {
  return (
    <section className="investigation-answer" aria-labelledby="investigation-answer">
      <h3 id="investigation-answer">The model's answer</h3>
      <p className="answer-text">{investigation.summary ?? investigation.answer}</p>
      <h4>Suggested actions</h4>
      {investigation.suggested_actions?.length ? (
        <ol>
          {investigation.suggested_actions.map((action, index) => (
            <li key={index}>{action}</li>
          ))}
        </ol>
      ) : (
        <p className="small muted">The model suggested nothing.</p>
      )}
      <dl className="fields">
        <div>
          <dt>Model</dt>
          <dd>{investigation.model}</dd>
        </div>
        <div>
          <dt>Tokens</dt>
          <dd>
            {formatCount(investigation.usage?.prompt_tokens)} in, {formatCount(investigation.usage?.completion_tokens)} out
          </dd>
        </div>
        <div>
          <dt>Completed</dt>
          <dd>{formatTime(investigation.completed_at)}</dd>
        </div>
      </dl>
      <p className="small muted">The answer comes from a language model reading the evidence beside it: check it against that evidence before acting on it.</p>
    </section>
  );
}

/** Queued or running: what is happening, said to screen readers as it changes. */
function UnderWay({ investigation }: { investigation: InvestigationAnswer }) {
  return (
    <p className="notice info" role="status" aria-live="polite">
      {investigation.status === 'queued' ? (
        <>
          <strong>Queued</strong> since <SeenAt time={investigation.created_at} />: waiting for a worker.
        </>
      ) : (
        <>
          <strong>Running</strong> since <SeenAt time={investigation.started_at ?? investigation.created_at} />: the evidence is gathered and the model ({investigation.model}) is answering.
        </>
      )}{' '}
      This updates by itself.
    </p>
  );
}

/**
 * "Investigate with AI", shown only while investigations are on: starting one polls it while it is queued
 * and running, then shows the stored evidence and the model's answer side by side.
 */
export function Investigation({ issueID }: { issueID: string }) {
  const state = useIssueInvestigation(issueID);
  const start = useInvestigateIssue(issueID);
  const canInvestigate = useCan('member');
  // off (the configuration says so, or the API answered ai_unavailable): no action to offer
  if (state.fetchStatus === 'idle' && state.isPending) return null;
  if (state.data && !state.data.on) return null;
  const investigation = state.data?.on ? state.data.investigation : undefined;
  const underWay = investigation && (investigation.status === 'queued' || investigation.status === 'running');
  return (
    <section className="panel investigation" aria-labelledby="investigation-heading">
      <div className="panel-head">
        <h2 id="investigation-heading">AI investigation</h2>
        {canInvestigate && !underWay && !state.isPending && !state.isError && (
          <button type="button" className="primary" disabled={start.isPending} onClick={() => start.mutate()}>
            {investigation ? 'Investigate again' : 'Investigate with AI'}
          </button>
        )}
      </div>
      {state.isPending && <Loading label="Loading the latest investigation…" />}
      {state.isError && <ErrorNotice error={state.error} title="The investigation did not load" />}
      {start.isError && <ErrorNotice error={start.error} title="The investigation did not start" />}
      {investigation === null && (
        <p className="muted small">
          Sluice gathers the evidence itself (this issue's statistics and frames, related traces, deployments and log surges around its first event, anomalies and the service map) and asks the model to explain the issue from that evidence only.
        </p>
      )}
      {investigation && underWay && <UnderWay investigation={investigation} />}
      {investigation?.status === 'failed' && (
        <p className="notice error" role="alert">
          <strong>The investigation failed:</strong> {investigation.error ?? 'no reason was recorded'}
        </p>
      )}
      {investigation && (investigation.evidence || investigation.status === 'completed') && (
        <div className="investigation-body">
          {investigation.evidence ? <Evidence evidence={investigation.evidence} /> : <p className="muted small">No evidence was stored.</p>}
          {investigation.status === 'completed' ? <Answer investigation={investigation} /> : <p className="muted small">The answer appears here once the model has replied.</p>}
        </div>
      )}
    </section>
  );
}
