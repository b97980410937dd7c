import { Link } from 'react-router';
import { ConfirmButton } from '../../components/ConfirmButton';
import { ErrorNotice } from '../../components/states';
import { useSetReplayCapture, type Project } from '../projects/api';

/**
 * The session-replay switch with what turning it on means: what the API stores, who may watch it, and
 * that switching it off also withdraws viewing of what was recorded.
 */
export function ReplaySwitch({ project, canAdmin }: { project: Project; canAdmin: boolean }) {
  const setCapture = useSetReplayCapture(project.id);
  const enabled = project.session_replay.enabled;
  return (
    <section className="panel" aria-labelledby="replay-heading">
      <h2 id="replay-heading">Session replay</h2>
      <p>
        Capture is <strong className={`badge ${enabled ? 'ok' : ''}`}>{enabled ? 'on' : 'off'}</strong> for {project.name}.
      </p>
      <div className="consent small">
        <p>
          <strong>What is stored.</strong> With capture on, browser SDKs that have the Replay integration send recordings of what your users see: the page&apos;s
          structure and text, mouse movement, clicks, scrolling and typing as the SDK&apos;s masking settings leave them, with the session&apos;s URLs, user (id,
          e-mail, username, IP address), release, environment, and the errors and traces seen during it. Sluice keeps them for the organization&apos;s retention
          period.
        </p>
        <p>
          <strong>Who may watch.</strong> Admins and members see the list of sessions; only owners may watch a recording, and every viewing is written to the{' '}
          <Link to="/settings/audit-log">audit log</Link>. Tell your users, as your privacy policy requires.
        </p>
        <p>
          <strong>Turning it off</strong> stops new recordings within seconds and withdraws consent for those already stored: nobody can watch them any more; they
          stay listed until retention removes them.
        </p>
      </div>
      <div className="actions">
        {enabled ? (
          <ConfirmButton
            label="Turn capture off"
            title={`Turn session replay off for ${project.name}?`}
            confirmLabel="Turn capture off"
            disabled={!canAdmin}
            pending={setCapture.isPending}
            consequence={<p>New recordings are refused within seconds, and the recordings already stored can no longer be watched by anyone (they stay listed).</p>}
            onConfirm={() => setCapture.mutate(false)}
          />
        ) : (
          <button type="button" className="primary" disabled={!canAdmin || setCapture.isPending} onClick={() => setCapture.mutate(true)}>
            Turn capture on
          </button>
        )}
        {!canAdmin && <span className="small muted">Only admins and owners can switch session replay.</span>}
      </div>
      {setCapture.isError && <ErrorNotice error={setCapture.error} title="Session replay was not switched" />}
    </section>
  );
}
