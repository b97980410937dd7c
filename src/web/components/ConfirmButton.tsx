import { useEffect, useRef, useState, type ReactNode } from 'react';

/** A modal dialog that asks before something is lost: Escape or "Cancel" calls `onCancel`, the confirm button `onConfirm`. */
export function ConfirmDialog({ title, consequence, confirmLabel, cancelLabel = 'Cancel', onConfirm, onCancel }: { title: string; consequence: ReactNode; confirmLabel: string; cancelLabel?: string; onConfirm: () => void; onCancel: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    if (dialog.current && !dialog.current.open) dialog.current.showModal();
  }, []);
  return (
    <dialog ref={dialog} className="confirm-dialog" aria-labelledby="confirm-title" onClose={onCancel}>
      <h2 id="confirm-title">{title}</h2>
      <div className="confirm-consequence">{consequence}</div>
      <div className="actions">
        <button type="button" onClick={onCancel}>
          {cancelLabel}
        </button>
        <button type="button" className="danger" onClick={onConfirm}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

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
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" className={className} disabled={disabled || pending} onClick={() => setOpen(true)}>
        {pending ? `${label}…` : label}
      </button>
      {open && (
        <ConfirmDialog
          title={title}
          consequence={consequence}
          confirmLabel={confirmLabel}
          onCancel={() => setOpen(false)}
          onConfirm={() => {
            setOpen(false);
            onConfirm();
          }}
        />
      )}
    </>
  );
}
