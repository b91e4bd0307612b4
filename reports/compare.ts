import type { SecurityScorecard, TaskScorecard } from '../harness/model/scorecard.js';
import { visibleText } from './clean-text.js';

export interface ComparedCell {
  verdict: string;
  reason: string;
  /** The first outside evidence behind the verdict. */
  evidence: string;
}

export interface Comparison {
  backends: string[];
  rows: { id: string; kind: 'security' | 'task'; cells: (ComparedCell | undefined)[]; differs: boolean }[];
}

const oneLine = (t: string, max = 140): string => {
  const s = visibleText(t).replace(/\s+/g, ' ');
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};

/** Side by side: one row per probe and task case, one column per run (backend). */
export function compareCards(runs: readonly { security: SecurityScorecard; task: TaskScorecard }[]): Comparison {
  const backends = runs.map((r) => oneLine(r.security.backend.name, 64));
  const ids: { id: string; kind: 'security' | 'task' }[] = [];
  const seen = new Set<string>();
  for (const r of runs) {
    for (const x of r.security.results) if (!seen.has(x.id) && seen.add(x.id)) ids.push({ id: x.id, kind: 'security' });
    for (const x of r.task.results) if (!seen.has(x.id) && seen.add(x.id)) ids.push({ id: x.id, kind: 'task' });
  }
  const rows = ids.map(({ id, kind }) => {
    const cells = runs.map((r): ComparedCell | undefined => {
      if (kind === 'security') {
        const x = r.security.results.find((y) => y.id === id);
        return x && { verdict: x.verdict, reason: oneLine(x.reason), evidence: oneLine(x.evidence.find((e) => e.source === 'outside')?.detail ?? '') };
      }
      const x = r.task.results.find((y) => y.id === id);
      return x && { verdict: x.outcome === 'as-expected' ? (x.verdict ?? 'error') : `${x.verdict ?? 'error'} (unexpected)`, reason: oneLine(x.reason), evidence: '' };
    });
    return { id: oneLine(id, 128), kind, cells, differs: new Set(cells.map((c) => c?.verdict ?? '-')).size > 1 };
  });
  return { backends, rows };
}

/** A Markdown report: the matrix, then the evidence for every row where the runs differ. */
export function comparisonMarkdown(c: Comparison): string {
  const esc = (t: string) => t.replaceAll('|', '\\|');
  const head = `| probe | ${c.backends.join(' | ')} |\n|---|${c.backends.map(() => '---').join('|')}|`;
  const body = c.rows.map((r) => `| ${r.differs ? `**${r.id}**` : r.id} | ${r.cells.map((x) => x?.verdict ?? '–').join(' | ')} |`).join('\n');
  const diffs = c.rows
    .filter((r) => r.differs)
    .map((r) => [`### ${r.id}`, ...r.cells.map((x, i) => `- **${c.backends[i]}**: ${x ? `${x.verdict}: ${esc(x.reason)}${x.evidence ? ` — evidence: ${esc(x.evidence)}` : ''}` : 'not run'}`)].join('\n'))
    .join('\n\n');
  return `# sandcheck comparison\n\n${head}\n${body}\n\n## Where they differ\n\n${diffs || 'Nowhere: every probe and task case came out the same.'}\n`;
}

export function comparisonText(c: Comparison): string {
  const w = Math.max(5, ...c.rows.map((r) => r.id.length));
  const cw = c.backends.map((b, i) => Math.max(b.length, ...c.rows.map((r) => r.cells[i]?.verdict.length ?? 1)));
  const line = (id: string, cells: string[], mark = ' ') => `${mark} ${id.padEnd(w)}  ${cells.map((x, i) => x.padEnd(cw[i] ?? 0)).join('  ')}`.trimEnd();
  return [line('probe', c.backends), ...c.rows.map((r) => line(r.id, r.cells.map((x) => x?.verdict ?? '-'), r.differs ? '*' : ' '))].join('\n');
}
