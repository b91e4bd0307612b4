import type { MatrixCell, MatrixClaim, MatrixColumn, MatrixReport } from './matrix-model.js';
import { MATRIX_LEGEND } from './matrix-recommend.js';
import { mdCell, mdRow, mdTableHead } from './markdown-text.js';

/** `matrix.md`: the same matrix as matrix.html, every box-derived text through mdCell (no `|`, no markup). */

/** A cell's verdict as shown in both renderers: task outcomes that were not as expected say so. */
export function cellVerdict(cell: MatrixCell | null): string {
  if (!cell) return '–';
  if (cell.outcome === 'unexpected') return `${cell.verdict} (UNEXPECTED)`;
  if (cell.outcome === 'error') return 'error';
  return cell.waived ? `${cell.verdict} (waived)` : cell.verdict;
}

/** What a column header says under the backend name. */
export function columnFacts(c: MatrixColumn): string[] {
  if (c.status === 'unavailable') return [`UNAVAILABLE: ${c.unavailable?.reason ?? ''}`, `install: ${c.unavailable?.install ?? ''}`];
  return [
    ...(c.label !== undefined ? [`label: ${c.label}`] : []),
    `tool: ${c.tool ?? 'unknown'}`,
    `kernel: ${c.kernel ?? 'unknown'}`,
    `policy: ${c.policy ?? 'unknown'}`,
    ...(c.isolation === 'none' ? ['isolation: NONE (control)'] : []),
    ...(c.incomplete ? ['INCOMPLETE run'] : []),
  ];
}

const ms = (c: { p50: number; p95: number }): string => `p50 ${c.p50} ms · p95 ${c.p95} ms`;

/** Cold start with its sample size beside every figure; across several columns, first over the executions all of them share. */
export function coldStartText(c: MatrixColumn, m?: Pick<MatrixReport, 'coldStartSame'>): string {
  if (!c.coldStartMs) return 'not recorded';
  const all = `${ms(c.coldStartMs)} (${c.coldStartMs.samples} executions)`;
  if (!m || m.coldStartSame.columns < 2) return all;
  if (!c.coldStartSameMs) return `none of the executions every backend ran; all: ${all}`;
  const same = `${ms(c.coldStartSameMs)} over the same ${c.coldStartSameMs.samples} executions`;
  return c.coldStartSameMs.samples === c.coldStartMs.samples ? `${same} (all of this run's)` : `${same}; all: ${all}`;
}

/** A column's name as a table header: the backend, then its tool's name and version when the card records one. */
export const columnTitle = (c: MatrixColumn): string => (c.toolShort ? `${c.header} (${c.toolShort})` : c.header);

/** The ranking rows, best first: rank (`=` when shared), the column, the counts compared. */
export function rankingRows(m: MatrixReport): { rank: string; column: MatrixColumn; key: number[] }[] {
  return m.ranking.order.flatMap((o) => {
    const column = m.columns[o.column];
    if (!column) return [];
    const shared = o.rank !== null && m.ranking.order.filter((x) => x.rank === o.rank).length > 1;
    return [{ rank: o.rank === null ? 'not ranked' : `${o.rank}${shared ? '=' : ''}`, column, key: o.key }];
  });
}

export const COLD_START_NOTE =
  'Cold start: create() to the first output byte. The first figures are over the same probes and task cases in every column (equal sample sizes); "all" is every execution of that run, its size beside it.';

/** Every item some column claims or ran unclaimed, with each column's claim of it (null: not claimed there, and not run). */
export function claimRows(m: MatrixReport): { item: string; cells: (MatrixClaim | null)[] }[] {
  const items = [...new Set(m.columns.flatMap((c) => c.claims.map((x) => x.item)))].sort();
  return items.map((item) => ({ item, cells: m.columns.map((c) => c.claims.find((x) => x.item === item) ?? null) }));
}

/** A claims cell: the claim (or its absence) next to what its probes showed; a failed one names the probes that failed. */
export function claimText(c: MatrixClaim | null, column: MatrixColumn | undefined): string {
  if (column?.status === 'unavailable') return 'unavailable';
  if (!c) return 'not claimed';
  const shown = c.failing.length > 0 ? c.failing : c.probes;
  const probes = shown.length ? ` (${shown.join(', ')})` : '';
  if (!c.claimed) return `not claimed, observed ${c.observed}${probes}`;
  return `${c.falseClaim ? 'FALSE CLAIM: ' : ''}claimed, observed ${c.observed}${probes}`;
}

export function matrixMarkdown(m: MatrixReport): string {
  const cols = m.columns;
  const out: string[] = ['# sandcheck matrix\n\n'];
  out.push('## Ranking\n\n', `${mdCell(m.ranking.rule, 2000)}\n\n`);
  out.push(mdTableHead(['rank', 'backend', 'crossed', 'inconclusive', 'held, not claimed', 'unenforced', 'false claims', 'probes ran']));
  for (const r of rankingRows(m)) {
    const o = r.column.outcomes;
    out.push(
      mdRow(
        o
          ? [r.rank, columnTitle(r.column), ...r.key.map(String), String(r.column.falseClaims), String(o.ran)]
          : [r.rank, columnTitle(r.column), '–', '–', '–', '–', '–', 'unavailable'],
      ),
    );
  }
  out.push('\n## What each backend stops and lets through\n\n');
  for (const r of rankingRows(m)) out.push(`- **${mdCell(r.rank)}. ${mdCell(columnTitle(r.column))}**: ${mdCell(r.column.summary, 6000)}\n`);
  out.push('\n## Totals\n\n', `${mdCell(COLD_START_NOTE, 1000)}\n\n`);
  out.push(mdTableHead(['backend', 'score: security, then task', 'cold start', 'false claims', 'facts']));
  for (const c of cols) out.push(mdRow([c.header, c.score, c.status === 'ran' ? coldStartText(c, m) : '–', String(c.falseClaims), columnFacts(c).join('; ')]));
  out.push('\n## Legend\n\n');
  for (const l of MATRIX_LEGEND) out.push(`- **${mdCell(l.term)}**: ${mdCell(l.meaning, 1000)}\n`);
  for (const group of [...new Set(m.rows.map((r) => r.group))]) {
    out.push(`\n## ${group === 'task' ? 'Task cases' : `Security: ${group}`}\n\n`);
    out.push(mdTableHead(['probe', ...cols.map((c) => mdCell(columnTitle(c)))]));
    for (const r of m.rows.filter((x) => x.group === group)) {
      const id = mdCell(r.id);
      out.push(
        `| ${r.differs ? `**${id}**` : id} | ${r.cells.map((x, i) => (cols[i]?.status === 'unavailable' ? 'unavailable' : mdCell(cellVerdict(x)))).join(' | ')} |\n`,
      );
    }
  }
  out.push('\n## Claims against what was observed\n\n');
  const claims = claimRows(m);
  if (claims.length === 0) out.push('No backend claims to enforce any policy item.\n\n');
  else {
    out.push(mdTableHead(['policy item', ...cols.map((c) => mdCell(columnTitle(c)))]));
    for (const r of claims)
      out.push(
        `| ${mdCell(r.item)} | ${r.cells.map((x, i) => (x?.falseClaim ? `**${mdCell(claimText(x, cols[i]))}**` : mdCell(claimText(x, cols[i])))).join(' | ')} |\n`,
      );
    out.push('\n');
  }
  out.push('## Evidence\n\n');
  for (const r of m.rows) {
    r.cells.forEach((x, i) => {
      if (!x) return;
      out.push(`- **${mdCell(r.id)}** on ${mdCell(cols[i]?.header ?? '')}: ${mdCell(cellVerdict(x))}: ${mdCell(x.reason, 400)}\n`);
      for (const e of x.evidence) out.push(`  - ${mdCell(e, 400)}\n`);
    });
  }
  return out.join('');
}
