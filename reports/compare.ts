import type { SecurityScorecard, TaskScorecard } from '../model/scorecard.js';
import { visibleText } from '../core/clean-text.js';

export interface ComparedCell {
  verdict: string;
  reason: string;
  /** The first outside evidence behind the verdict. */
  evidence: string;
}

/** One policy field whose value is not the same in every column. */
export interface PolicyDifference {
  /** Dotted path in the policy, e.g. `resources.processes`. */
  field: string;
  /** The value in each column, as compact JSON (`–` where the field is absent). */
  values: string[];
}

export interface Comparison {
  /** Column headers: backend name, its --label in brackets; runs that would look alike are numbered. */
  backends: string[];
  rows: { id: string; kind: 'security' | 'task'; cells: (ComparedCell | undefined)[]; differs: boolean }[];
  /** Policy fields that differ between the columns (empty: one policy everywhere). */
  policyDiffs: PolicyDifference[];
}

const oneLine = (t: string, max = 140): string => {
  const s = visibleText(t).replace(/\s+/g, ' ');
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};

/** Leaf values of a policy (or any JSON value, e.g. a backend's applied options) by dotted path; arrays are leaves (compared whole). */
export function policyLeaves(value: unknown, prefix = '', out = new Map<string, string>()): Map<string, string> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) policyLeaves(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix !== '') out.set(prefix, JSON.stringify(value) ?? 'undefined');
  return out;
}

export function policyDifferences(policies: readonly unknown[]): PolicyDifference[] {
  const leaves = policies.map((p) => policyLeaves(p));
  const fields = [...new Set(leaves.flatMap((l) => [...l.keys()]))].sort();
  return fields.flatMap((field) => {
    const values = leaves.map((l) => oneLine(l.get(field) ?? '–', 80));
    return new Set(values).size > 1 ? [{ field: oneLine(field, 128), values }] : [];
  });
}

/** Backend name and label; columns that would still look alike get `#n` so no two headers are the same. */
function columnHeaders(runs: readonly { security: SecurityScorecard }[]): string[] {
  const plain = runs.map((r) =>
    oneLine(r.security.environment?.label ? `${r.security.backend.name} [${r.security.environment.label}]` : r.security.backend.name, 96),
  );
  return plain.map((h, i) => (plain.filter((x) => x === h).length > 1 ? `${h} #${i + 1}` : h));
}

/** Side by side: one row per probe and task case, one column per run (backend and label). */
export function compareCards(runs: readonly { security: SecurityScorecard; task: TaskScorecard }[]): Comparison {
  const backends = columnHeaders(runs);
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
      return (
        x && {
          verdict:
            x.outcome === 'as-expected' ? (x.verdict ?? 'error') : x.outcome === 'not-applicable' ? 'not-applicable' : `${x.verdict ?? 'error'} (unexpected)`,
          reason: oneLine(x.reason),
          evidence: '',
        }
      );
    });
    return { id: oneLine(id, 128), kind, cells, differs: new Set(cells.map((c) => c?.verdict ?? '-')).size > 1 };
  });
  return { backends, rows, policyDiffs: policyDifferences(runs.map((r) => r.security.policy)) };
}

function policyLines(c: Comparison): string[] {
  if (c.policyDiffs.length === 0) return [c.backends.length > 1 ? 'policy: the same in every column' : ''];
  return [
    `policy differs in ${c.policyDiffs.length} field(s): ${c.policyDiffs.map((d) => d.field).join(', ')}`,
    ...c.policyDiffs.map((d) => `  ${d.field}: ${d.values.map((v, i) => `${c.backends[i]}=${v}`).join('  ')}`),
  ];
}

/** A Markdown report: the matrix, then the evidence for every row where the runs differ. */
export function comparisonMarkdown(c: Comparison): string {
  const esc = (t: string) => t.replaceAll('|', '\\|');
  const head = `| probe | ${c.backends.map(esc).join(' | ')} |\n|---|${c.backends.map(() => '---').join('|')}|`;
  const body = c.rows.map((r) => `| ${r.differs ? `**${r.id}**` : r.id} | ${r.cells.map((x) => x?.verdict ?? '–').join(' | ')} |`).join('\n');
  const diffs = c.rows
    .filter((r) => r.differs)
    .map((r) =>
      [
        `### ${r.id}`,
        ...r.cells.map(
          (x, i) => `- **${c.backends[i]}**: ${x ? `${x.verdict}: ${esc(x.reason)}${x.evidence ? ` — evidence: ${esc(x.evidence)}` : ''}` : 'not run'}`,
        ),
      ].join('\n'),
    )
    .join('\n\n');
  const policy = c.policyDiffs.length
    ? `| policy field | ${c.backends.map(esc).join(' | ')} |\n|---|${c.backends.map(() => '---').join('|')}|\n${c.policyDiffs
        .map(
          (d) =>
            `| ${esc(d.field)} | ${d.values
              .map((v) => `\`${v.replaceAll('`', "'")}\``)
              .map(esc)
              .join(' | ')} |`,
        )
        .join('\n')}`
    : 'The same policy in every column.';
  return `# sandcheck comparison\n\n${head}\n${body}\n\n## Policy differences\n\n${policy}\n\n## Where they differ\n\n${diffs || 'Nowhere: every probe and task case came out the same.'}\n`;
}

export function comparisonText(c: Comparison): string {
  const w = Math.max(5, ...c.rows.map((r) => r.id.length));
  const cw = c.backends.map((b, i) => Math.max(b.length, ...c.rows.map((r) => r.cells[i]?.verdict.length ?? 1)));
  const line = (id: string, cells: string[], mark = ' ') => `${mark} ${id.padEnd(w)}  ${cells.map((x, i) => x.padEnd(cw[i] ?? 0)).join('  ')}`.trimEnd();
  return [
    line('probe', c.backends),
    ...c.rows.map((r) =>
      line(
        r.id,
        r.cells.map((x) => x?.verdict ?? '-'),
        r.differs ? '*' : ' ',
      ),
    ),
    ...policyLines(c),
  ]
    .join('\n')
    .trimEnd();
}
