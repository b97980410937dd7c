import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { ChoiceField } from '../../components/ChoiceField';
import { ConfirmButton } from '../../components/ConfirmButton';
import { PageHeader } from '../../components/PageHeader';
import { SecretOnce } from '../../components/SecretOnce';
import { EmptyState, ErrorNotice, Loading, QueryView } from '../../components/states';
import { Pager } from '../../components/Table';
import { formatDuration } from '../../lib/format';
import { useQueryParams } from '../../lib/url-state';
import { useRole } from '../auth/permissions';
import { useProjects } from '../projects/api';
import { useCreateDestination, useDeleteDestination, useDestinations, useSendTest, type Destination, type NewDestination, type TestOutcome } from './api';
import { ALERT_KINDS, DESTINATION_TYPES, destinationLabel, KIND_LABELS, oneOf, TimeAt } from './parts';
import './alerts.css';
import { RoleLimit } from '../auth/RoleLimit';
import { FormField } from '../../components/FormField';

type DestinationType = Destination['type'];
const TYPES = Object.keys(DESTINATION_TYPES) as DestinationType[];


const TYPE_HINTS: Record<DestinationType, string> = {
  email: 'Each address is mailed a confirmation link; alerts go to an address once its owner opens the link.',
  webhook: 'Sluice POSTs each alert as JSON, signed with X-Sluice-Signature (HMAC-SHA256 of the body).',
  slack: 'A Slack incoming-webhook URL; each alert is posted as a message.',
};

/** The name of each project the page knows, for the filters a destination has. */
function useProjectNames() {
  const projects = useProjects();
  const names = new Map((projects.data?.data ?? []).map((project) => [project.id, project.name]));
  return { projects: projects.data?.data ?? [], nameOf: (id: string) => names.get(id) ?? id };
}

function NewDestinationForm() {
  const [type, setType] = useState<DestinationType>('webhook');
  // a saved form is drawn anew, empty (the chosen type stays)
  const [drawn, setDrawn] = useState(0);
  const create = useCreateDestination();
  const { projects } = useProjectNames();
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const text = (name: string) => String(form.get(name) ?? '').trim();
    const filters = {
      ...(text('name') && { name: text('name') }),
      kinds: form.getAll('kinds').map(String) as NonNullable<NewDestination['kinds']>,
      project_ids: form.getAll('project_ids').map(String),
    };
    const secret = text('secret');
    const body: NewDestination =
      type === 'email'
        ? { type, emails: text('emails').split(/[\s,;]+/).filter(Boolean), ...filters }
        : type === 'webhook'
          ? { type, url: text('url'), ...(secret ? { secret } : { generate_secret: true }), ...filters }
          : { type, url: text('url'), ...filters };
    create.mutate(body, { onSuccess: () => setDrawn((count) => count + 1) });
  };
  const created = create.data;
  return (
    <section className="panel" aria-labelledby="new-destination">
      <h2 id="new-destination">Add a destination</h2>
      <form key={drawn} className="destination-form" onSubmit={submit}>
        <fieldset className="choice-row">
          <legend>Type</legend>
          {TYPES.map((choice) => (
            <label key={choice} className="inline-field">
              <input type="radio" name="type" value={choice} checked={type === choice} onChange={() => setType(choice)} />
              {DESTINATION_TYPES[choice]}
            </label>
          ))}
        </fieldset>
        <p className="small muted">{TYPE_HINTS[type]}</p>
        <label className="field">
          <span>Name (optional)</span>
          <input type="text" name="name" maxLength={200} placeholder="e.g. On-call" />
        </label>
        {type === 'email' ? (
          <div className="field hinted">
            <label htmlFor="emails-field">Addresses</label>
            <textarea id="emails-field" name="emails" rows={2} required placeholder="oncall@example.com, lead@example.com" aria-describedby="emails-hint" />
            <small id="emails-hint" className="muted">
              One to 50 addresses, separated by commas or new lines.
            </small>
          </div>
        ) : (
          <div className="field hinted">
            <label htmlFor="url-field">{type === 'slack' ? 'Slack incoming-webhook URL' : 'Webhook URL'}</label>
            <input id="url-field" type="url" name="url" required maxLength={2048} placeholder={type === 'slack' ? 'https://hooks.slack.com/services/…' : 'https://hooks.example.com/sluice'} aria-describedby="url-hint" />
            <small id="url-hint" className="muted">
              Private and loopback addresses are refused unless the server&apos;s OUTBOUND_ALLOWLIST lets them through. Sluice shows only the host afterwards: the rest of the URL may be a credential.
            </small>
          </div>
        )}
        {type === 'webhook' && (
          <div className="field hinted">
            <label htmlFor="secret-field">Signing secret (optional)</label>
            <input id="secret-field" type="password" name="secret" minLength={8} maxLength={256} autoComplete="off" aria-describedby="secret-hint" />
            <small id="secret-hint" className="muted">
              Leave empty and Sluice generates one, shown once after saving. A typed secret needs 8 characters or more.
            </small>
          </div>
        )}
        <fieldset className="check-grid">
          <legend>Alert kinds</legend>
          <p className="small muted">None ticked: every kind, including kinds added later.</p>
          {ALERT_KINDS.map((kind) => (
            <label key={kind} className="inline-field">
              <input type="checkbox" name="kinds" value={kind} />
              {KIND_LABELS[kind]}
            </label>
          ))}
        </fieldset>
        <fieldset className="check-grid">
          <legend>Projects</legend>
          <p className="small muted">None ticked: every project, and alerts that belong to no project.</p>
          {projects.length === 0 && <p className="small muted">The organisation has no project yet.</p>}
          {projects.map((project) => (
            <label key={project.id} className="inline-field">
              <input type="checkbox" name="project_ids" value={project.id} />
              {project.name}
            </label>
          ))}
        </fieldset>
        {create.isError && <ErrorNotice error={create.error} title="The destination was not added" />}
        <div className="actions">
          <button type="submit" className="primary" disabled={create.isPending}>
            {create.isPending ? 'Adding…' : 'Add destination'}
          </button>
        </div>
      </form>
      {created && (
        <div className="created" role="status">
          <p>
            Added <strong>{destinationLabel(created)}</strong>.{' '}
            {created.type === 'email' && 'A confirmation link was mailed to each address not confirmed yet.'}
          </p>
          {created.secret && (
            <SecretOnce
              label="Signing secret"
              secret={created.secret}
              warning="Copy it now and give it to the receiver, which checks X-Sluice-Signature with it: Sluice shows it only this once and cannot show it again."
            />
          )}
        </div>
      )}
    </section>
  );
}

/** A test's outcome, in place: what was reached and how it answered, or why not. */
function OutcomeNotice({ outcome }: { outcome: TestOutcome }) {
  const facts = [outcome.http_status !== null && `HTTP ${outcome.http_status}`, formatDuration(outcome.duration_ms)].filter(Boolean).join(' · ');
  return (
    <div className={`notice small ${outcome.status === 'delivered' ? 'ok' : 'error'}`}>
      <strong>{outcome.status === 'delivered' ? 'Test delivered' : 'Test failed'}</strong>
      {outcome.error && <>: {outcome.error}</>}
      {outcome.recipients.length > 0 && <> to {outcome.recipients.join(', ')}</>}
      <div className="muted">
        {facts} · <TimeAt time={outcome.attempted_at} />
      </div>
    </div>
  );
}

function DestinationActions({ destination }: { destination: Destination }) {
  const test = useSendTest();
  const remove = useDeleteDestination();
  const label = destinationLabel(destination);
  return (
    <div className="destination-actions">
      <div className="actions">
        <button type="button" disabled={test.isPending} onClick={() => test.mutate(destination.id)}>
          {test.isPending ? 'Sending…' : 'Send a test'}
          <span className="visually-hidden"> to {label}</span>
        </button>
        <ConfirmButton
          label="Delete"
          title="Delete this destination?"
          consequence={
            <p>
              Alerts stop going to <strong className="wrap-anywhere">{label}</strong> at once, and deliveries still due to it are dropped. {destination.type === 'webhook' && destination.secret_set && 'Its signing secret is gone for good. '}
              The alert history keeps the deliveries already made.
            </p>
          }
          confirmLabel="Delete destination"
          pending={remove.isPending}
          onConfirm={() => remove.mutate(destination.id)}
        />
      </div>
      <div aria-live="polite">{test.data && <OutcomeNotice outcome={test.data} />}</div>
      {test.isError && <ErrorNotice error={test.error} title="The test was not sent" />}
      {remove.isError && <ErrorNotice error={remove.error} title="The destination was not deleted" />}
    </div>
  );
}

function Target({ destination }: { destination: Destination }) {
  if (destination.type !== 'email') return <code className="wrap-anywhere">{destination.url}</code>;
  return (
    <ul className="addresses">
      {(destination.addresses ?? []).map((address) => (
        <li key={address.email}>
          <span className="wrap-anywhere">{address.email}</span> {address.verified ? <span className="badge ok">confirmed</span> : <span className="badge warning">awaiting confirmation</span>}
        </li>
      ))}
    </ul>
  );
}

/** One destination: where it sends, what it takes, and its actions with a test's outcome. */
function DestinationCard({ destination, nameOf }: { destination: Destination; nameOf: (projectId: string) => string }) {
  return (
    <li className="panel destination">
      <div className="destination-head">
        <h3 className="wrap-anywhere">{destination.name ?? DESTINATION_TYPES[destination.type]}</h3>
        <span className="badge">{DESTINATION_TYPES[destination.type]}</span>
      </div>
      <Target destination={destination} />
      <dl className="destination-facts">
        <div>
          <dt>Alert kinds</dt>
          <dd>{destination.kinds.length ? destination.kinds.map((kind) => KIND_LABELS[kind]).join(', ') : 'Every kind'}</dd>
        </div>
        <div>
          <dt>Projects</dt>
          <dd className="wrap-anywhere">{destination.project_ids.length ? destination.project_ids.map(nameOf).join(', ') : 'Every project'}</dd>
        </div>
        {destination.type === 'webhook' && (
          <div>
            <dt>Signed</dt>
            <dd>{destination.secret_set ? 'Yes, with X-Sluice-Signature' : 'No'}</dd>
          </div>
        )}
        <div>
          <dt>Added</dt>
          <dd>
            <TimeAt time={destination.created_at} />
          </dd>
        </div>
      </dl>
      <DestinationActions destination={destination} />
    </li>
  );
}

function DestinationList() {
  const { get, update } = useQueryParams();
  const cursor = get('cursor');
  const destinations = useDestinations(cursor);
  const { projects, nameOf } = useProjectNames();
  const type = oneOf(TYPES, get('type'));
  const project = get('project');
  // the API lists every destination: these filters narrow the page read, as few as organisations keep
  const shown = (list: readonly Destination[]) => list.filter((d) => (!type || d.type === type) && (!project || d.project_ids.length === 0 || d.project_ids.includes(project)));
  return (
    <section className="destinations" aria-labelledby="destination-list">
      <h2 id="destination-list">Destinations</h2>
      <div className="toolbar">
        <ChoiceField label="Type" name="type" value={type} choices={TYPES} anyLabel="Any type" onChange={(value) => update({ type: value })} />
        <FormField label="Receives alerts of">
          {(control) => (
            <select {...control} name="project" value={project ?? ''} onChange={(event) => update({ project: event.target.value })}>
              <option value="">Any project</option>
              {projects.map((choice) => (
                <option key={choice.id} value={choice.id}>
                  {choice.name}
                </option>
              ))}
            </select>
          )}
        </FormField>
      </div>
      <QueryView
        query={destinations}
        loadingLabel="Loading destinations…"
        isEmpty={(page) => shown(page.data).length === 0 && !cursor}
        empty={
          type || project ? (
            <EmptyState title="No destination matches these filters">
              <button type="button" onClick={() => update({ type: undefined, project: undefined })}>
                Clear filters
              </button>
            </EmptyState>
          ) : (
            <EmptyState title="No destinations yet">
              <p>Alerts are recorded in the history but reach nobody. Add an email, webhook or Slack destination below, then send it a test.</p>
            </EmptyState>
          )
        }
      >
        {(page) => (
          <>
            <ul className="destination-list" aria-label="Alert destinations">
              {shown(page.data).map((destination) => (
                <DestinationCard key={destination.id} destination={destination} nameOf={nameOf} />
              ))}
            </ul>
            <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(cursor)} onNext={(next) => update({ cursor: next })} onFirst={() => update({ cursor: undefined })} />
          </>
        )}
      </QueryView>
    </section>
  );
}

export default function DestinationsPage() {
  const role = useRole();
  return (
    <>
      <PageHeader
        title="Alert destinations"
        description={
          <>
            Where alerts are sent: email, webhooks and Slack, each for every alert or only some kinds and projects. See what was sent in the <Link to="/alerts">alert history</Link>.
          </>
        }
      />
      {role === undefined ? (
        <Loading />
      ) : role === 'member' ? (
        <RoleLimit>
          Only admins and owners see and change alert destinations. You can read the <Link to="/alerts">alert history</Link> with each delivery&apos;s status and the <Link to="/reports">digest preview</Link>; ask an admin to add, test or
          delete a destination.
        </RoleLimit>
      ) : (
        <>
          <DestinationList />
          <NewDestinationForm />
        </>
      )}
    </>
  );
}
