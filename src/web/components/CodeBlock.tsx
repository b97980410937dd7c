import { CopyButton } from './CopyButton';

/** A block of code or configuration to paste, with a copy button. */
export function CodeBlock({ code, label }: { code: string; label: string }) {
  return (
    <figure className="code-block" aria-label={label}>
      <pre tabIndex={0}>
        <code>{code}</code>
      </pre>
      <CopyButton className="copy" text={code} label={`Copy ${label}`} />
    </figure>
  );
}
