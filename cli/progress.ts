import type { AnyResult, RunReporter } from '../model/events.js';

const label = (r: AnyResult): string =>
  r.kind === 'security'
    ? `${r.verdict}${r.claimed === false && (r.verdict === 'crossed' || r.verdict === 'held') ? ' — not claimed' : ''}`
    : `${r.verdict ?? 'error'} (${r.outcome})`;

/** A live status line on a TTY; plain one-line-per-result output in CI and pipes. */
export function progressReporter(stream: NodeJS.WriteStream, live = Boolean(stream.isTTY) && !process.env['CI']): RunReporter {
  let total = 0;
  let done = 0;
  const running = new Set<string>();
  const redraw = (): void => {
    if (!live || running.size === 0) return;
    const names = [...running].join(', ');
    stream.write(`\r\x1b[2K[${done}/${total}] running ${names}`.slice(0, (stream.columns || 100) + 8));
  };
  return {
    onRunStart: (i) => {
      total = i.total;
      if (live) stream.write('\r\x1b[2K');
      stream.write(`sandcheck run ${i.runId}: backend ${i.backend}, policy ${i.policy}, ${i.total} probes and task cases\n`);
    },
    onProbeStart: (i) => {
      running.add(i.id);
      redraw();
    },
    onProbeEnd: (r) => {
      running.delete(r.id);
      done += 1;
      if (live) stream.write('\r\x1b[2K');
      stream.write(`[${done}/${total}] ${label(r).padEnd(14)} ${r.id} (${(r.durationMs / 1000).toFixed(1)} s)\n`);
      redraw();
    },
    onNotice: (m) => {
      if (live) stream.write('\r\x1b[2K');
      stream.write(`${m}\n`);
      redraw();
    },
    onRunEnd: () => {
      if (live) stream.write('\r\x1b[2K');
    },
  };
}
