/**
 * A labelled select over a query parameter's values, with a first option that clears it ("All levels"):
 * the filter forms' enum parameters (level, kind, status…).
 */
export function ChoiceField({ label, name, value, choices, anyLabel, onChange }: { label: string; name: string; value: string | undefined; choices: readonly string[]; anyLabel: string; onChange: (value: string) => void }) {
  return (
    <label className="field">
      <span>{label}</span>
      <select name={name} value={value ?? ''} onChange={(event) => onChange(event.target.value)}>
        <option value="">{anyLabel}</option>
        {choices.map((choice) => (
          <option key={choice} value={choice}>
            {choice}
          </option>
        ))}
      </select>
    </label>
  );
}
