import { Link } from 'react-router';
import { PageHeader } from '../../components/PageHeader';
import { Pager, Table } from '../../components/Table';
import { EmptyState, QueryView } from '../../components/states';
import { formatCount, formatDuration, formatTime, timeZone } from '../../lib/format';
import { useQueryParams } from '../../lib/url-state';
import { useCan, useRole } from '../auth/permissions';
import { useProjects } from '../projects/api';
import { useReplays, userOf } from './api';
import './replays.css';

/** `/replays?project=`: the project's recorded sessions; owners open them in the player. */
export default function ReplayListPage() {
  const { get, update } = useQueryParams();
  const projectId = get('project');
  const cursor = get('cursor');
  const isOwner = useCan('owner');
  const role = useRole();
  const projects = useProjects();
  const replays = useReplays(projectId, cursor);
  const project = projects.data?.data.find((candidate) => candidate.id === projectId);
  return (
    <>
      <PageHeader title="Session replays" description="Recorded browser sessions: what a user saw and did around an error." />
      {role && !isOwner && (
        <div className="notice info">
          Only the organization&apos;s owners may watch a recording, because it shows what a person saw and typed; each viewing is written to the audit log. Your role
          is <strong>{role}</strong>: you see which sessions were recorded, not the recordings.
        </div>
      )}
      {!projectId ? (
        <QueryView query={projects}>
          {(page) => (
            <EmptyState title="Choose a project">
              <p>Recordings belong to a project. Pick one in the bar above, or here:</p>
              <ul className="project-choices">
                {page.data.map((item) => (
                  <li key={item.id}>
                    <Link to={`/replays?project=${item.id}`}>{item.name}</Link>
                  </li>
                ))}
              </ul>
            </EmptyState>
          )}
        </QueryView>
      ) : (
        <>
          {project && !project.session_replay.enabled && (
            <div className="notice info">
              Session replay is off for {project.name}: new sessions are not recorded, and recordings already stored cannot be watched. Admins switch it in{' '}
              <Link to={`/settings/projects?project=${project.id}`}>Settings › Projects</Link>.
            </div>
          )}
          <QueryView
            query={replays}
            isEmpty={(page) => page.data.length === 0 && !cursor}
            empty={
              <EmptyState title="No recorded sessions">
                <p>
                  Turn session replay on in <Link to={`/settings/projects?project=${projectId}`}>the project&apos;s settings</Link>, then add the Replay integration to
                  your browser SDK (<code>Sentry.replayIntegration()</code>). Sessions appear here as their first segment arrives.
                </p>
              </EmptyState>
            }
          >
            {(page) => (
              <>
                <Table
                  caption={`Recorded sessions (times in ${timeZone()})`}
                  rows={page.data}
                  rowKey={(replay) => replay.id}
                  columns={[
                    {
                      header: 'Started',
                      cell: (replay) =>
                        isOwner ? (
                          <Link to={`/replays/${replay.project_id}/${replay.id}`}>{formatTime(replay.started_at)}</Link>
                        ) : (
                          <span className="nowrap">{formatTime(replay.started_at)}</span>
                        ),
                    },
                    { header: 'User', cell: (replay) => <span className="wrap-anywhere">{userOf(replay)}</span> },
                    { header: 'First page', cell: (replay) => <span className="wrap-anywhere">{replay.urls[0] ?? '—'}</span> },
                    { header: 'Duration', numeric: true, cell: (replay) => formatDuration(replay.duration_ms) },
                    { header: 'Segments', numeric: true, cell: (replay) => formatCount(replay.segment_count) },
                    { header: 'Errors', numeric: true, cell: (replay) => formatCount(replay.error_ids.length) },
                    { header: 'Release', cell: (replay) => [replay.release, replay.environment].filter(Boolean).join(' · ') || '—' },
                  ]}
                />
                <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(cursor)} onNext={(next) => update({ cursor: next })} onFirst={() => update({ cursor: undefined })} />
              </>
            )}
          </QueryView>
        </>
      )}
    </>
  );
}
