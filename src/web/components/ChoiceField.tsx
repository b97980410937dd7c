import { useId } from 'react';

/**
 * A labelled select over a query parameter's values, with a first option that clears it ("All levels"):
 * the filter forms' enum parameters (level, kind, status…). The label is tied by `for`, not by nesting, so
 * the select's name is the label alone rather than the label and every option's text.
 */
export function ChoiceField({ label, name, value, choices, anyLabel, onChange }: { label: string; name: string; value: string | undefined; choices: readonly string[]; anyLabel: string; onChange: (value: string) => void }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select id={id} name={name} value={value ?? ''} onChange={(event) => onChange(event.target.value)}>
        <option value="">{anyLabel}</option>
        {choices.map((choice) => (
          <option key={choice} value={choice}>
            {choice}
          </option>
        ))}
      </select>
    </div>
  );
}
