import type { IssueEvent, StackFrame } from './api';

type Exception = IssueEvent['exception'][number];

const location = (frame: { filename: string | null; abs_path: string | null; lineno: number | null; colno: number | null }) =>
  [frame.filename ?? frame.abs_path ?? '<unknown file>', frame.lineno, frame.colno].filter((part) => part != null).join(':');

/** The lines around the frame's line, numbered, the frame's own line marked (not by colour alone). */
function FrameContext({ frame }: { frame: StackFrame }) {
  if (frame.context_line == null) return null;
  const first = frame.lineno != null ? frame.lineno - frame.pre_context.length : undefined;
  const lines = [...frame.pre_context.map((text) => ({ text, current: false })), { text: frame.context_line, current: true }, ...frame.post_context.map((text) => ({ text, current: false }))];
  return (
    <ol className="frame-context" start={first} aria-label={`Source around line ${frame.lineno ?? ''}`}>
      {lines.map((line, index) => (
        <li key={index} className={line.current ? 'current' : undefined} value={first === undefined ? undefined : first + index}>
          <code>{line.text || ' '}</code>
          {line.current && <span className="visually-hidden"> (the line of this frame)</span>}
        </li>
      ))}
    </ol>
  );
}

function Frame({ frame }: { frame: StackFrame }) {
  return (
    <li className={frame.in_app ? 'frame in-app' : 'frame'}>
      <div className="frame-head">
        <span className="frame-function mono wrap-anywhere">{frame.function ?? '<anonymous>'}</span>
        <span className="muted small"> in </span>
        <span className="frame-file mono wrap-anywhere">{location(frame)}</span>
        {frame.module && <span className="muted small wrap-anywhere"> ({frame.module})</span>}
        {frame.in_app && <span className="badge in-app-badge">in app</span>}
        {frame.symbolicated && <span className="badge">source-mapped</span>}
        {frame.source_url && (
          <a href={frame.source_url} target="_blank" rel="noreferrer" className="small">
            View source<span className="visually-hidden"> of {location(frame)}</span>
          </a>
        )}
      </div>
      {frame.symbolication_error && <p className="small muted">Not source-mapped: {frame.symbolication_error}</p>}
      <FrameContext frame={frame} />
      {frame.minified && (
        <details className="minified">
          <summary className="small">Minified frame</summary>
          <p className="mono small wrap-anywhere">
            {frame.minified.function ?? '<anonymous>'} in {location(frame.minified)}
            {frame.source_map && <span className="muted"> · source map {frame.source_map}</span>}
          </p>
        </details>
      )}
    </li>
  );
}

/**
 * Frames most recent first. In-app frames are shown open; runs of library frames fold into one
 * collapsible group, unless no frame is in-app (then every frame is the reader's only clue).
 */
function Frames({ frames }: { frames: StackFrame[] }) {
  const newestFirst = [...frames].reverse();
  const anyInApp = newestFirst.some((frame) => frame.in_app);
  if (!anyInApp) {
    return (
      <ol className="frames">
        {newestFirst.map((frame, index) => (
          <Frame key={index} frame={frame} />
        ))}
      </ol>
    );
  }
  const groups: Array<{ inApp: boolean; frames: StackFrame[] }> = [];
  for (const frame of newestFirst) {
    const last = groups.at(-1);
    if (last && last.inApp === frame.in_app) last.frames.push(frame);
    else groups.push({ inApp: frame.in_app, frames: [frame] });
  }
  return (
    <ol className="frames">
      {groups.map((group, index) =>
        group.inApp ? (
          group.frames.map((frame, at) => <Frame key={`${index}-${at}`} frame={frame} />)
        ) : (
          <li key={index} className="library-frames">
            <details>
              <summary className="small">
                {group.frames.length} library {group.frames.length === 1 ? 'frame' : 'frames'}
              </summary>
              <ol className="frames">
                {group.frames.map((frame, at) => (
                  <Frame key={at} frame={frame} />
                ))}
              </ol>
            </details>
          </li>
        ),
      )}
    </ol>
  );
}

/** An event's exception chain, the exception that was raised last (the crash) first. */
export function StackFrames({ exceptions }: { exceptions: Exception[] }) {
  const newestFirst = [...exceptions].reverse();
  return (
    <div className="exceptions">
      {newestFirst.map((exception, index) => {
        const handled = exception.mechanism?.handled;
        return (
          <section key={index} className="exception" aria-label={`Exception ${exception.type ?? ''}`}>
            <h3 className="wrap-anywhere">
              {exception.type ?? 'Error'}
              {exception.value && <span className="exception-value">: {exception.value}</span>}
            </h3>
            {(index > 0 || typeof handled === 'boolean') && (
              <p className="small muted">
                {index > 0 && 'Caused the exception above. '}
                {typeof handled === 'boolean' && (handled ? 'Handled' : 'Unhandled')}
                {typeof exception.mechanism?.type === 'string' && ` (${exception.mechanism.type})`}
              </p>
            )}
            {exception.frames.length ? <Frames frames={exception.frames} /> : <p className="small muted">No stack trace was sent.</p>}
          </section>
        );
      })}
    </div>
  );
}
