import { CopyButton } from './CopyButton';

/** A secret the API shows exactly once (an API key, a webhook's signing secret, an invite link), with a copy button and the warning. */
export function SecretOnce({ label, secret, warning = 'Copy it now: Sluice shows it only this once and cannot show it again.' }: { label: string; secret: string; warning?: string }) {
  return (
    <div className="notice secret-once" role="status">
      <strong>{label}</strong>
      <div className="dsn">
        <code className="wrap-anywhere">{secret}</code>
        <CopyButton text={secret} label={`Copy ${label.toLowerCase()}`} />
      </div>
      <p className="small">{warning}</p>
    </div>
  );
}
