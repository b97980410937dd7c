import { useEffect, useId, useRef, useState } from 'react';
import { Replayer, type eventWithTime } from 'rrweb';
import playerStyles from 'rrweb/dist/style.css?url';
import { formatDuration } from '../../lib/format';

const SPEEDS = [1, 2, 4, 8];

/** m:ss.t of a position in the recording. */
const clock = (ms: number) => {
  const tenths = Math.max(0, Math.floor(ms / 100));
  const seconds = Math.floor(tenths / 10);
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}.${tenths % 10}`;
};

/**
 * rrweb's replayer, drawn inside the stage: /replay-frame.html, a same-origin document served with a CSP of its
 * own that allows the recorded page's inline styles and loads nothing from anywhere (the dashboard's CSP allows
 * no inline style, and rrweb's sandboxed frame inherits its parent's policy). The stage runs no script; this
 * page drives it, scaled to fit the width available.
 */
export function ReplayPlayer({ events, label }: { events: eventWithTime[]; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  const speedId = useId();
  const stage = useRef<HTMLIFrameElement>(null);
  const [stageLoaded, setStageLoaded] = useState(false);
  const [replayer, setReplayer] = useState<Replayer>();
  const [viewport, setViewport] = useState<{ width: number; height: number }>();
  const [boxWidth, setBoxWidth] = useState(0);
  const [playing, setPlaying] = useState(false);
  const [position, setPosition] = useState(0);
  const [speed, setSpeed] = useState(1);

  useEffect(() => {
    const doc = stage.current?.contentDocument;
    if (!stageLoaded || !doc) return;
    doc.body.style.margin = '0';
    const styles = doc.createElement('link');
    styles.rel = 'stylesheet';
    styles.href = playerStyles;
    doc.head.append(styles);
    const player = new Replayer(events, { root: doc.body, skipInactive: true, showWarning: false, mouseTail: false });
    player.iframe.title = `Recorded page: ${label}`;
    player.iframe.style.border = '0';
    player.on('resize', (dimension) => setViewport(dimension as { width: number; height: number }));
    player.on('finish', () => setPlaying(false));
    setReplayer(player);
    return () => {
      player.destroy();
      styles.remove();
      setReplayer(undefined);
    };
  }, [stageLoaded, events, label]);

  // the recorded viewport scaled to the width available
  useEffect(() => {
    if (!box.current) return;
    const observer = new ResizeObserver(([entry]) => setBoxWidth(entry?.contentRect.width ?? 0));
    observer.observe(box.current);
    return () => observer.disconnect();
  }, []);
  useEffect(() => {
    if (!replayer || !viewport || !boxWidth || !stage.current) return;
    const scale = Math.min(1, boxWidth / viewport.width);
    replayer.wrapper.style.transform = `scale(${scale})`;
    replayer.wrapper.style.transformOrigin = '0 0';
    stage.current.style.height = `${Math.ceil(viewport.height * scale)}px`;
  }, [replayer, viewport, boxWidth]);

  useEffect(() => {
    if (!replayer || !playing) return;
    const timer = setInterval(() => setPosition(replayer.getCurrentTime()), 200);
    return () => clearInterval(timer);
  }, [replayer, playing]);

  const total = replayer?.getMetaData().totalTime ?? 0;
  const seek = (offset: number) => {
    setPosition(offset);
    if (playing) replayer?.play(offset);
    else replayer?.pause(offset);
  };
  const toggle = () => {
    if (!replayer) return;
    if (playing) {
      replayer.pause();
      setPosition(replayer.getCurrentTime());
      setPlaying(false);
    } else {
      replayer.play(position >= total ? 0 : position);
      setPlaying(true);
    }
  };
  return (
    <figure className="replay-player" aria-label={`Player: ${label}`}>
      <div ref={box} className="replay-stage-box">
        <iframe ref={stage} className="replay-stage" src="/replay-frame.html" sandbox="allow-same-origin" title={`Session replay of ${label}`} onLoad={() => setStageLoaded(true)} />
      </div>
      <figcaption className="replay-controls">
        <button type="button" className="primary" onClick={toggle} disabled={!replayer}>
          {playing ? 'Pause' : 'Play'}
        </button>
        <label className="inline-field replay-position">
          <span className="visually-hidden">Position</span>
          <input type="range" min={0} max={total} step={100} value={Math.min(position, total)} onChange={(event) => seek(Number(event.target.value))} disabled={!replayer} />
        </label>
        <span className="mono nowrap" aria-label="Time">
          {clock(position)} / {clock(total)}
        </span>
        <label className="inline-field" htmlFor={speedId}>
          Speed
        </label>
        <select
          id={speedId}
          value={speed}
          onChange={(event) => {
            const next = Number(event.target.value);
            setSpeed(next);
            replayer?.setConfig({ speed: next });
          }}
        >
          {SPEEDS.map((value) => (
            <option key={value} value={value}>
              {value}×
            </option>
          ))}
        </select>
        <span className="small muted">Inactive stretches are skipped; the recording lasts {formatDuration(total)}.</span>
      </figcaption>
    </figure>
  );
}
