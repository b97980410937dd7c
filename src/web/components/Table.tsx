import type { ReactNode } from 'react';

export interface Column<Row> {
  /** The header's text. */
  header: string;
  cell: (row: Row) => ReactNode;
  /** Numbers align right and keep their units on one line. */
  numeric?: boolean;
  /** A header only screen readers hear (e.g. for an actions column). */
  hiddenHeader?: boolean;
}

/** A real table: a caption naming it, column headers, one row per item. */
export function Table<Row>({ caption, columns, rows, rowKey, captionHidden = false }: { caption: string; columns: Column<Row>[]; rows: readonly Row[]; rowKey: (row: Row) => string; captionHidden?: boolean }) {
  return (
    <div className="table-wrap">
      <table>
        <caption className={captionHidden ? 'visually-hidden' : undefined}>{caption}</caption>
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column.header} scope="col" className={column.numeric ? 'number' : undefined}>
                {column.hiddenHeader ? <span className="visually-hidden">{column.header}</span> : column.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)}>
              {columns.map((column) => (
                <td key={column.header} className={column.numeric ? 'number' : undefined}>
                  {column.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Next/previous through a cursor-paged list: the cursor lives in the URL (`?cursor=`). */
export function Pager({ nextCursor, hasPrevious, onNext, onFirst }: { nextCursor: string | null | undefined; hasPrevious: boolean; onNext: (cursor: string) => void; onFirst: () => void }) {
  if (!nextCursor && !hasPrevious) return null;
  return (
    <nav className="pager" aria-label="Pages">
      {hasPrevious && (
        <button type="button" onClick={onFirst}>
          First page
        </button>
      )}
      {nextCursor && (
        <button type="button" onClick={() => onNext(nextCursor)}>
          Next page
        </button>
      )}
    </nav>
  );
}
