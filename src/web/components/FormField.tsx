import { useId, type ReactNode } from 'react';

/** What a control takes from its FormField: its id, and the help and refusal that describe it. */
export interface ControlProps {
  id: string;
  'aria-describedby'?: string;
  'aria-invalid'?: boolean;
}

/**
 * A labelled control with its help and the API's refusal beside it. Both sit outside the label, so the
 * control's name stays its label and they are read as its description.
 */
export function FormField({ label, help, error, wide = false, children }: { label: string; help?: ReactNode; error?: string; wide?: boolean; children: (control: ControlProps) => ReactNode }) {
  const id = useId();
  const describedBy = [help && `${id}-help`, error && `${id}-error`].filter(Boolean).join(' ');
  return (
    <div className={wide ? 'field wide' : 'field'}>
      <label htmlFor={id} className="field-label">
        {label}
      </label>
      {children({ id, ...(describedBy && { 'aria-describedby': describedBy }), ...(error && { 'aria-invalid': true }) })}
      {help && (
        <small id={`${id}-help`} className="field-help">
          {help}
        </small>
      )}
      {error && (
        <small id={`${id}-error`} className="field-error" role="alert">
          {error}
        </small>
      )}
    </div>
  );
}
