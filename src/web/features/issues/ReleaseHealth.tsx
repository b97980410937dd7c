import { Link } from 'react-router';
import { ErrorNotice } from '../../components/states';
import { formatTime } from '../../lib/format';
import { useReleaseDeployments, type Issue } from './api';
import './release-health.css';

/** The releases whose deployments are linked: the issue's newest ones (it lists them in the order it met them). */
const RELEASES_SHOWN = 3;

function ReleaseDeployments({ project, version }: { project: string; version: string }) {
  const deployments = useReleaseDeployments(project, version);
  return (
    <li>
      <span className="mono wrap-anywhere">{version}</span>
      {deployments.isPending && <span className="small muted"> · looking for its deployments…</span>}
      {deployments.isError && <ErrorNotice error={deployments.error} title={`The deployments of ${version} did not load`} />}
      {deployments.data &&
        (deployments.data.data.length === 0 ? (
          <span className="small muted">
            {' '}
            · no deployment of it was recorded. <Link to={`/releases?project=${project}&version=${encodeURIComponent(version)}`}>Record one</Link> to see whether it made things worse.
          </span>
        ) : (
          <ul className="release-deployments">
            {deployments.data.data.map((deployment) => (
              <li key={deployment.id}>
                <Link to={`/deployments/${deployment.id}`}>
                  Deployment health of {version} in {deployment.environment}
                </Link>{' '}
                <span className="small muted">deployed {formatTime(deployment.deployed_at)}</span>{' '}
                {deployment.verdict && <span className={`badge ${deployment.verdict}`}>{deployment.verdict.replace('_', ' ')}</span>}
              </li>
            ))}
          </ul>
        ))}
    </li>
  );
}

/** Links from the issue to the health of its releases' deployments: did the deployment that brought it make things worse? */
export function ReleaseHealth({ issue }: { issue: Issue }) {
  if (issue.releases.length === 0) return null;
  const shown = issue.releases.slice(-RELEASES_SHOWN).reverse();
  return (
    <section className="panel" aria-labelledby="release-health">
      <h2 id="release-health">Release health</h2>
      <ul className="release-health">
        {shown.map((version) => (
          <ReleaseDeployments key={version} project={issue.project_id} version={version} />
        ))}
      </ul>
      {issue.releases.length > RELEASES_SHOWN && (
        <p className="small muted">
          The {RELEASES_SHOWN} releases this issue met last; <Link to={`/releases?project=${issue.project_id}`}>every release</Link> is on the releases page.
        </p>
      )}
    </section>
  );
}
