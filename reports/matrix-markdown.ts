import type { MatrixCell, MatrixClaim, MatrixColumn, MatrixReport } from './matrix-model.js';
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

export const coldStartText = (c: MatrixColumn): string =>
  c.coldStartMs ? `p50 ${c.coldStartMs.p50} ms · p95 ${c.coldStartMs.p95} ms (${c.coldStartMs.samples} executions)` : 'not recorded';

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
  out.push(mdTableHead(['backend', 'score: security, then task', 'cold start', 'false claims', 'facts']));
  for (const c of cols) out.push(mdRow([c.header, c.score, c.status === 'ran' ? coldStartText(c) : '–', String(c.falseClaims), columnFacts(c).join('; ')]));
  for (const group of [...new Set(m.rows.map((r) => r.group))]) {
    out.push(`\n## ${group === 'task' ? 'Task cases' : `Security: ${group}`}\n\n`);
    out.push(mdTableHead(['probe', ...cols.map((c) => mdCell(c.header))]));
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
    out.push(mdTableHead(['policy item', ...cols.map((c) => mdCell(c.header))]));
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
