import { useMemo } from 'react';
import { useProjects } from '../projects/api';
import type { Verdict } from './api';

const VERDICT_WORDS: Record<Verdict, string> = { healthy: 'healthy', degraded: 'degraded', insufficient_data: 'insufficient data' };

/** A deployment's verdict as a badge; a deployment whose windows have not passed yet has none. */
export function VerdictBadge({ verdict, pendingLabel = 'not judged yet' }: { verdict: Verdict | null; pendingLabel?: string }) {
  if (!verdict) return <span className="small muted">{pendingLabel}</span>;
  return <span className={`badge ${verdict}`}>{VERDICT_WORDS[verdict]}</span>;
}

/** Project names by id, for lists that answer ids. */
export function useProjectNames(): (id: string) => string {
  const projects = useProjects();
  return useMemo(() => {
    const names = new Map(projects.data?.data.map((project) => [project.id, project.name]));
    return (id: string) => names.get(id) ?? id;
  }, [projects.data]);
}

/** A commit: its short hash, linked to the code host when the project's integration names the repository. */
export function CommitLink({ sha, url, repository }: { sha: string | null; url: string | null; repository?: string | null }) {
  if (!sha && !url) return <span className="muted">—</span>;
  const short = sha ? sha.slice(0, 12) : 'commit';
  return (
    <span className="commit">
      {url ? (
        <a href={url} target="_blank" rel="noreferrer noopener" className="mono">
          {short}
          <span className="visually-hidden"> (the commit on the code host, opens in a new tab)</span>
        </a>
      ) : (
        <span className="mono" title={sha ?? undefined}>
          {short}
        </span>
      )}
      {repository && <span className="small muted wrap-anywhere"> in {repository}</span>}
    </span>
  );
}
