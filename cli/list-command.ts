import { allProbes, optInProbes } from '../suites/index.js';
import { safeJsonStringify, visibleLine } from '../core/clean-text.js';
import { EXIT } from '../core/errors.js';

/** `sandcheck list`: what the suite holds, without loading a backend, the runner or a report writer. */
export async function listCommand(opts: { json?: boolean; tasks?: string }): Promise<number> {
  const listed = [...allProbes(opts.tasks ? await (await import('../harness/task/load-tasks.js')).loadTaskDir(opts.tasks) : []), ...optInProbes];
  const rows = listed.map((p) => ({
    id: p.id,
    kind: p.kind,
    category: p.kind === 'security' ? p.category : 'task',
    policyItem: p.policyItem,
    // Opt-in probes run only when named with --only (suites/allowlist.ts).
    title: optInProbes.includes(p) ? `[opt-in, --only] ${p.title}` : p.title,
    ...(optInProbes.includes(p) ? { optIn: true } : {}),
    ...(p.kind === 'task' ? { expected: p.expected } : { attack: [...p.attack], cwe: [...p.cwe] }),
  }));
  if (opts.json) {
    process.stdout.write(`${safeJsonStringify(rows, 2)}\n`);
    return EXIT.ok;
  }
  const cells = rows.map((r) => ({ ...r, attack: 'attack' in r ? r.attack.join(',') : '-', cwe: 'cwe' in r ? r.cwe.join(',') : '-' }));
  type Cells = { id: string; kind: string; category: string; policyItem: string; attack: string; cwe: string; title: string };
  const w = (k: Exclude<keyof Cells, 'title'>) => Math.max(k.length, ...cells.map((r) => r[k].length));
  const line = (r: Cells) =>
    `${r.id.padEnd(w('id'))}  ${r.kind.padEnd(w('kind'))}  ${r.category.padEnd(w('category'))}  ${r.policyItem.padEnd(w('policyItem'))}  ${r.attack.padEnd(w('attack'))}  ${r.cwe.padEnd(w('cwe'))}  ${r.title}`;
  // Task files are user input: their ids and titles reach the terminal only cleaned.
  for (const r of cells) Object.assign(r, { id: visibleLine(r.id), policyItem: visibleLine(r.policyItem), title: visibleLine(r.title) });
  process.stdout.write(`${line({ id: 'id', kind: 'kind', category: 'category', policyItem: 'policyItem', attack: 'attack', cwe: 'cwe', title: 'title' })}\n`);
  for (const r of cells) process.stdout.write(`${line(r)}\n`);
  return EXIT.ok;
}
