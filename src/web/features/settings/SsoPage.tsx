import { useState, type FormEvent } from 'react';
import { ApiError } from '../../api/client';
import { ConfirmButton } from '../../components/ConfirmButton';
import { CopyButton } from '../../components/CopyButton';
import { PageHeader } from '../../components/PageHeader';
import { ErrorNotice, Loading } from '../../components/states';
import { formatTime } from '../../lib/format';
import { useCan, useRole } from '../auth/permissions';
import { useClaimDomain, useDeleteSsoConnection, usePutSsoConnection, useSsoConnection, useSsoDomains, useVerifyDomain, useWithdrawDomain, type SsoDomain } from './sso-api';
import './projects.css';
import { RoleLimit } from '../auth/RoleLimit';

type Connection = NonNullable<ReturnType<typeof useSsoConnection>['data']>;

function ConnectionForm({ connection }: { connection: Connection | undefined }) {
  const put = usePutSsoConnection();
  const [issuer, setIssuer] = useState(connection?.issuer ?? '');
  const [clientId, setClientId] = useState(connection?.client_id ?? '');
  const [secret, setSecret] = useState('');
  const [enabled, setEnabled] = useState(connection?.enabled ?? true);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    put.mutate({ issuer: issuer.trim(), client_id: clientId.trim(), enabled, ...(secret && { client_secret: secret }) }, { onSuccess: () => setSecret('') });
  };
  return (
    <form className="settings-form" onSubmit={submit}>
      <div className="toolbar">
        <label className="field">
          <span>Issuer URL</span>
          <input name="issuer" type="url" required value={issuer} onChange={(event) => setIssuer(event.target.value)} placeholder="https://login.example.com/realms/acme" />
        </label>
        <label className="field">
          <span>Client id</span>
          <input name="client_id" required maxLength={512} value={clientId} onChange={(event) => setClientId(event.target.value)} />
        </label>
        <label className="field">
          <span>{connection ? 'New client secret (empty keeps the stored one)' : 'Client secret'}</span>
          <input name="client_secret" type="password" autoComplete="off" required={!connection} maxLength={4096} value={secret} onChange={(event) => setSecret(event.target.value)} />
        </label>
        <label className="inline-field">
          <input type="checkbox" name="enabled" checked={enabled} onChange={(event) => setEnabled(event.target.checked)} />
          Members may sign in with it
        </label>
        <button type="submit" className="primary" disabled={put.isPending}>
          {put.isPending ? 'Checking the issuer…' : connection ? 'Save connection' : 'Connect'}
        </button>
      </div>
      <p className="small muted">Sluice reads the issuer&apos;s discovery document before saving. The secret is kept encrypted and never shown again.</p>
      {put.isError && <ErrorNotice error={put.error} title="The connection was not saved" />}
    </form>
  );
}

function ConnectionPanel() {
  const connection = useSsoConnection();
  const remove = useDeleteSsoConnection();
  const missing = connection.error instanceof ApiError && connection.error.status === 404 ? connection.error : undefined;
  if (connection.isPending) return <Loading />;
  if (connection.isError && !missing) return <ErrorNotice error={connection.error} />;
  const current = connection.data;
  return (
    <section className="panel" aria-labelledby="connection-heading">
      <h2 id="connection-heading">OpenID Connect connection</h2>
      {current ? (
        <>
          <dl className="integration-status">
            <dt>Issuer</dt>
            <dd>{current.issuer}</dd>
            <dt>Client id</dt>
            <dd>
              <code>{current.client_id}</code>
            </dd>
            <dt>Client secret</dt>
            <dd>
              <span className="badge ok">set</span> (never shown)
            </dd>
            <dt>Sign-in</dt>
            <dd>{current.enabled ? 'on' : 'off: nobody can sign in with single sign-on until it is switched on'}</dd>
            <dt>Redirect URI to register at the provider</dt>
            <dd className="dsn">
              <code>{current.redirect_uri}</code>
              <CopyButton text={current.redirect_uri} label="Copy redirect URI" />
            </dd>
            <dt>Last changed</dt>
            <dd>{formatTime(current.updated_at)}</dd>
          </dl>
        </>
      ) : (
        <p className="notice info">
          Not set up yet. {missing?.message}
        </p>
      )}
      <ConnectionForm key={current?.updated_at ?? 'new'} connection={current} />
      {current && (
        <div className="actions">
          <ConfirmButton
            label="Remove connection"
            title="Remove single sign-on?"
            confirmLabel="Remove connection"
            pending={remove.isPending}
            consequence={
              <p>
                Nobody can sign in through {current.issuer} any more, and every account&apos;s link to its identity there is deleted: people sign in with a password
                (or reset it) until a connection links them again. Claimed domains stay.
              </p>
            }
            onConfirm={() => remove.mutate()}
          />
          {remove.isError && <ErrorNotice error={remove.error} title="The connection was not removed" />}
        </div>
      )}
    </section>
  );
}

function DomainRow({ claim }: { claim: SsoDomain }) {
  const verify = useVerifyDomain();
  const withdraw = useWithdrawDomain();
  return (
    <li className="panel domain-claim" aria-label={claim.domain}>
      <h3>
        {claim.domain}{' '}
        {claim.verified ? <span className="badge ok">verified {formatTime(claim.verified_at)}</span> : <span className="badge warning">not verified</span>}
      </h3>
      {!claim.verified && (
        <ol className="step-list small">
          <li>
            Publish this TXT record in the DNS of {claim.domain}:
            <div role="group" aria-label={`TXT record for ${claim.domain}`} className="txt-record">
              <dl>
                <dt>Name</dt>
                <dd className="dsn">
                  <code>{claim.record.name}</code>
                  <CopyButton text={claim.record.name} label={`Copy record name for ${claim.domain}`} />
                </dd>
                <dt>Type</dt>
                <dd>
                  <code>{claim.record.type}</code>
                </dd>
                <dt>Value</dt>
                <dd className="dsn">
                  <code>{claim.record.value}</code>
                  <CopyButton text={claim.record.value} label={`Copy record value for ${claim.domain}`} />
                </dd>
              </dl>
            </div>
          </li>
          <li>
            Once it is published (DNS changes can take a while to spread), ask Sluice to look it up:{' '}
            <button type="button" className="primary" disabled={verify.isPending} onClick={() => verify.mutate(claim.domain)}>
              {verify.isPending ? 'Looking it up…' : `Verify ${claim.domain}`}
            </button>
          </li>
        </ol>
      )}
      {verify.isError && <ErrorNotice error={verify.error} title={`${claim.domain} is not verified yet`} />}
      {verify.isSuccess && verify.data.verified && (
        <p className="notice ok" role="status">
          {claim.domain} is verified: people with an address there can sign in with single sign-on.
        </p>
      )}
      <div className="actions">
        <ConfirmButton
          label="Withdraw claim"
          title={`Withdraw the claim on ${claim.domain}?`}
          confirmLabel="Withdraw claim"
          pending={withdraw.isPending}
          consequence={
            <p>
              {claim.verified ? `People with an ${claim.domain} address can no longer sign in with single sign-on. ` : ''}Claiming it again gives a new TXT record to
              publish.
            </p>
          }
          onConfirm={() => withdraw.mutate(claim.domain)}
        />
        {withdraw.isError && <ErrorNotice error={withdraw.error} title="The claim was not withdrawn" />}
      </div>
    </li>
  );
}

function DomainsPanel() {
  const domains = useSsoDomains();
  const claim = useClaimDomain();
  const [domain, setDomain] = useState('');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    claim.mutate(domain.trim(), { onSuccess: () => setDomain('') });
  };
  return (
    <section className="panel" aria-labelledby="domains-heading">
      <h2 id="domains-heading">E-mail domains</h2>
      <p className="small muted">
        Single sign-on starts from a person&apos;s e-mail address: its domain must be verified by this organization, which proves it with a DNS record.
      </p>
      <form className="toolbar settings-form" onSubmit={submit}>
        <label className="field">
          <span>Domain</span>
          <input name="domain" required maxLength={260} value={domain} onChange={(event) => setDomain(event.target.value)} placeholder="example.com" />
        </label>
        <button type="submit" className="primary" disabled={claim.isPending}>
          Claim domain
        </button>
      </form>
      {claim.isError && <ErrorNotice error={claim.error} title="The domain was not claimed" />}
      {domains.isPending ? (
        <Loading />
      ) : domains.isError ? (
        <ErrorNotice error={domains.error} />
      ) : domains.data.data.length === 0 ? (
        <p>No domain claimed yet. Claim the domain of your company&apos;s e-mail addresses to get the record to publish.</p>
      ) : (
        <ul className="domain-list" aria-label="Claimed domains">
          {domains.data.data.map((item) => (
            <DomainRow key={item.domain} claim={item} />
          ))}
        </ul>
      )}
    </section>
  );
}

/** Asked first: without API_PUBLIC_URL every SSO route answers 501 sso_unavailable, and the page says how to turn it on. */
function SsoSettings() {
  const connection = useSsoConnection();
  if (connection.error instanceof ApiError && connection.error.code === 'sso_unavailable') {
    return (
      <section className="notice info" aria-labelledby="sso-off">
        <h2 id="sso-off">Single sign-on is off on this server</h2>
        <p>The API answered: “{connection.error.message}”.</p>
        <ol className="step-list">
          <li>
            Set <code>API_PUBLIC_URL</code> to the address your users&apos; browsers reach the API at (for example <code>https://sluice.example.com</code>) and restart
            Sluice.
          </li>
          <li>
            Register <code>API_PUBLIC_URL/v1/auth/sso/callback</code> as the redirect URI of a client at your identity provider.
          </li>
          <li>Come back here to connect it and verify your e-mail domain.</li>
        </ol>
      </section>
    );
  }
  return (
    <>
      <ConnectionPanel />
      <DomainsPanel />
    </>
  );
}

/** `/settings/sso`: the OpenID Connect connection and the domains that lead to it. */
export default function SsoPage() {
  const role = useRole();
  const canAdmin = useCan('admin');
  return (
    <>
      <PageHeader title="Single sign-on" description="Let people sign in with your identity provider (OpenID Connect) when their e-mail domain is verified." />
      {!role ? (
        <Loading />
      ) : canAdmin ? (
        <SsoSettings />
      ) : (
        <RoleLimit>Only admins and owners can set up single sign-on.</RoleLimit>
      )}
    </>
  );
}
