/** An error shown by an icon and words, never by colour alone. */
export function ErrorMark({ label = 'Error' }: { label?: string }) {
  return (
    <span className="error-mark">
      <svg viewBox="0 0 16 16" width="14" height="14" aria-hidden="true" focusable="false">
        <circle cx="8" cy="8" r="7" />
        <path d="M8 4v5M8 11.2v.8" />
      </svg>
      {label}
    </span>
  );
}
