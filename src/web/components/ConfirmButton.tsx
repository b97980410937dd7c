import { useEffect, useRef, useState, type ReactNode } from 'react';

/**
 * A destructive action behind a confirmation: the button opens a modal dialog that says what will be lost,
 * and only its confirm button (labelled with the action) runs `onConfirm`. Escape or "Cancel" closes it.
 */
export function ConfirmButton({
  label,
  title,
  consequence,
  confirmLabel = label,
  onConfirm,
  pending = false,
  disabled = false,
  className = 'danger',
}: {
  label: string;
  title: string;
  consequence: ReactNode;
  confirmLabel?: string;
  onConfirm: () => void;
  pending?: boolean;
  disabled?: boolean;
  className?: string;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [open, setOpen] = useState(false);
  useEffect(() => {
    if (open) dialog.current?.showModal();
    else dialog.current?.close();
  }, [open]);
  return (
    <>
      <button type="button" className={className} disabled={disabled || pending} onClick={() => setOpen(true)}>
        {pending ? `${label}…` : label}
      </button>
      {open && (
        <dialog ref={dialog} className="confirm-dialog" aria-labelledby="confirm-title" onClose={() => setOpen(false)}>
          <h2 id="confirm-title">{title}</h2>
          <div className="confirm-consequence">{consequence}</div>
          <div className="actions">
            <button type="button" onClick={() => setOpen(false)}>
              Cancel
            </button>
            <button
              type="button"
              className="danger"
              onClick={() => {
                setOpen(false);
                onConfirm();
              }}
            >
              {confirmLabel}
            </button>
          </div>
        </dialog>
      )}
    </>
  );
}
