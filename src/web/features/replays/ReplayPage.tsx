import { useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';
import { ApiError } from '../../api/client';
import { PageHeader } from '../../components/PageHeader';
import { ErrorNotice, Loading } from '../../components/states';
import { formatCount, formatDuration, formatTime } from '../../lib/format';
import { useCan, useRole } from '../auth/permissions';
import { useRecording, userOf, type ReplayRecording } from './api';
import { ReplayPlayer } from './Player';
import { decodeSegments, type DecodedRecording } from './segments';
import './replays.css';

function useDecoded(recording: ReplayRecording | undefined) {
  const [decoded, setDecoded] = useState<DecodedRecording>();
  useEffect(() => {
    if (!recording) return;
    let current = true;
    void decodeSegments(recording.segments).then((result) => current && setDecoded(result));
    return () => {
      current = false;
    };
  }, [recording]);
  return decoded;
}

function Summary({ recording }: { recording: ReplayRecording }) {
  return (
    <dl className="stats">
      <div>
        <dt>Started</dt>
        <dd>{formatTime(recording.started_at)}</dd>
      </div>
      <div>
        <dt>Duration</dt>
        <dd>{formatDuration(recording.duration_ms)}</dd>
      </div>
      <div>
        <dt>User</dt>
        <dd>{userOf(recording)}</dd>
      </div>
      <div>
        <dt>Segments</dt>
        <dd>{formatCount(recording.segment_count)}</dd>
      </div>
      <div>
        <dt>Release</dt>
        <dd>{[recording.release, recording.environment].filter(Boolean).join(' · ') || '—'}</dd>
      </div>
    </dl>
  );
}

function Recording({ projectId, sessionId }: { projectId: string; sessionId: string }) {
  const recording = useRecording(projectId, sessionId, true);
  const decoded = useDecoded(recording.data);
  if (recording.isPending) return <Loading label="Loading the recording…" />;
  if (recording.isError) {
    const withdrawn = recording.error instanceof ApiError && recording.error.code === 'consent_withdrawn';
    return (
      <>
        <ErrorNotice error={recording.error} title={withdrawn ? 'This recording cannot be watched' : 'The recording did not load'} />
        {withdrawn && (
          <p>
            Session replay is off for this project, which withdraws consent to watch what it recorded. An admin can switch it on again in{' '}
            <Link to={`/settings/projects?project=${projectId}`}>Settings › Projects</Link>.
          </p>
        )}
      </>
    );
  }
  const data = recording.data;
  return (
    <>
      <Summary recording={data} />
      {data.urls.length > 0 && (
        <section className="panel" aria-labelledby="pages-heading">
          <h2 id="pages-heading">Pages visited</h2>
          <ol className="replay-urls">
            {data.urls.map((url, index) => (
              <li key={`${index}-${url}`} className="wrap-anywhere">
                {url}
              </li>
            ))}
          </ol>
        </section>
      )}
      {!decoded ? (
        <Loading label="Decoding the recording…" />
      ) : (
        <>
          {decoded.unreadable.length > 0 && (
            <p className="notice info">
              {decoded.unreadable.length === 1 ? 'Segment' : 'Segments'} {decoded.unreadable.join(', ')} could not be read (removed by retention, or not rrweb
              events); the player skips {decoded.unreadable.length === 1 ? 'it' : 'them'}.
            </p>
          )}
          {decoded.events.length < 2 ? (
            <p className="notice info">This recording holds too little to play: the browser sent fewer than two rrweb events.</p>
          ) : (
            <ReplayPlayer events={decoded.events} label={`${userOf(data)}, ${formatTime(data.started_at)}`} />
          )}
        </>
      )}
    </>
  );
}

/** `/replays/:projectId/:sessionId`: the notice that viewing is audited, then (owners only) the recording in rrweb's player. */
export default function ReplayPage() {
  const { projectId = '', sessionId = '' } = useParams();
  const role = useRole();
  const isOwner = useCan('owner');
  const [watching, setWatching] = useState(false);
  return (
    <>
      <PageHeader title="Session replay" description={<Link to={`/replays?project=${projectId}`}>All recorded sessions of this project</Link>} />
      {!role ? (
        <Loading />
      ) : !isOwner ? (
        <div className="notice info" role="status">
          Only the organization&apos;s owners may watch a recording, because it shows what a person saw and typed. Your role is <strong>{role}</strong>.
        </div>
      ) : (
        <>
          <div className="notice info audit-notice">
            <p>
              <strong>Viewing is audited.</strong> Opening this recording writes your name, the time and your address to the organization&apos;s{' '}
              <Link to="/settings/audit-log">audit log</Link>, where every admin can see it.
            </p>
            {!watching && (
              <button type="button" className="primary" onClick={() => setWatching(true)}>
                Watch the recording
              </button>
            )}
          </div>
          {watching && <Recording projectId={projectId} sessionId={sessionId} />}
        </>
      )}
    </>
  );
}
