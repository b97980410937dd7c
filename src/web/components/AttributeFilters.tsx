/** The `key:value` attribute filters in force (repeatable `attribute` parameters), each removable. */
export function AttributeFilters({ attributes, onRemove }: { attributes: readonly string[]; onRemove: (remaining: string[]) => void }) {
  if (attributes.length === 0) return null;
  return (
    <ul className="attribute-filters" aria-label="Attribute filters">
      {attributes.map((item) => (
        <li key={item}>
          <span className="mono wrap-anywhere">{item}</span>
          <button type="button" onClick={() => onRemove(attributes.filter((other) => other !== item))} aria-label={`Remove the filter ${item}`}>
            Remove
          </button>
        </li>
      ))}
    </ul>
  );
}
