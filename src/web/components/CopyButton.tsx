import { useState } from 'react';

/** Copies text to the clipboard and says so; the label names what is copied ("Copy DSN"). */
export function CopyButton({ text, label = 'Copy', className }: { text: string; label?: string; className?: string }) {
  const [copied, setCopied] = useState<'yes' | 'failed' | undefined>();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('yes');
    } catch {
      setCopied('failed');
    }
    setTimeout(() => setCopied(undefined), 2000);
  };
  return (
    <button type="button" className={className} onClick={() => void copy()}>
      {copied === 'yes' ? 'Copied' : copied === 'failed' ? 'Copy failed: select and copy' : label}
      <span className="visually-hidden" aria-live="polite">
        {copied === 'yes' ? 'Copied to the clipboard' : ''}
      </span>
    </button>
  );
}
