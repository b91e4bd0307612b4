import type { Evidence } from '../../model/evidence.js';
import type { SecurityResult, SecurityScorecard, TaskResult, TaskScorecard } from '../../model/scorecard.js';
import { exitCodeFor } from '../../harness/scorecard-builder.js';
import { evidenceFingerprint } from '../../harness/waivers.js';
import { gateReport, type GateReport, type GateRun } from '../gate.js';
import { securityCounts, taskCounts } from '../gate-render.js';
import { buildMatrix, claimsOf } from '../matrix-model.js';
import { coldStartText, columnFacts } from '../matrix-markdown.js';
import { RUN_HTML_CSS } from './css.js';
import { baseSection } from './base-section.js';
import { captureText, h, hBlock } from './html-text.js';
import { LEGEND, claimOf, securityOrder, securityTodo, taskOrder, taskTodo } from './what-to-do.js';

/**
 * `report.html`: one run's two cards as one self-contained page (inline CSS, no script, no external resource, a
 * Content-Security-Policy that forbids both). What needs a look comes first (crossed, unenforced, wrong task
 * verdicts, then inconclusive and harness errors), each with its evidence, the box's output and what to do; then
 * what changed against a base run, both cards in full, the claims, and a legend of the verdicts. Every text that
 * came from a card goes through `h`/`hBlock`: a payload that printed `<script>` shows as text.
 */

export interface RunHtmlOptions {
  /** The run before the change: the page shows what changed (the gate's classification, reports/gate.ts). */
  base?: GateRun;
  now?: Date;
}

type Cards = { dir: string; security: SecurityScorecard; task: TaskScorecard };

const EXIT_TEXT: Record<0 | 1 | 2, { cls: string; text: string }> = {
  0: { cls: 'held', text: 'every result as expected (exit 0)' },
  1: { cls: 'crossed', text: 'FAILED: a boundary crossed, a required item unenforced or a task verdict wrong (exit 1)' },
  2: { cls: 'inconclusive', text: 'INCONCLUSIVE: nothing crossed, but some results could not be shown either way (exit 2)' },
};

const attack = (r: SecurityResult): string => [...(r.attack ?? []).map((a) => `ATT&CK ${a}`), ...(r.cwe ?? [])].join(' · ') || 'no ATT&CK or CWE id';

/** A detail that reads as one line beside its witness; anything longer gets a block of its own. */
const short = (detail: string): boolean => detail.length <= 240 && !detail.includes('\n');

function evidenceList(evidence: readonly Evidence[]): string {
  if (evidence.length === 0) return '<p class="muted">No evidence recorded.</p>';
  const items = evidence.map(
    (e) =>
      `<li class="${e.source}"><span class="src">${e.source === 'outside' ? 'outside' : 'inside (the payload’s own word)'}</span> ${h(e.witness)}${e.where ? ` @ ${h(e.where)}` : ''}${
        short(e.detail) ? `: <span class="detail">${h(e.detail)}</span>` : `<pre>${hBlock(e.detail, 8 * 1024)}</pre>`
      }</li>`,
  );
  return `<ul class="evidence">${items.join('')}</ul>`;
}

function boxOutput(obs: SecurityResult['observation'], open = false): string {
  if (!obs) return '';
  const stream = (name: string, c: typeof obs.stdout): string =>
    c.bytes === 0
      ? `<p class="muted">${name}: empty</p>`
      : `<p class="muted">${name}: ${c.bytes} bytes${c.truncated ? ', truncated' : ''}</p><pre class="out">${hBlock(captureText(c), 8 * 1024)}</pre>`;
  const exit = obs.exitCode !== null ? `exit ${obs.exitCode}` : `signal ${obs.signal ?? '?'}`;
  return `<details${open ? ' open' : ''}><summary>Box output (${h(exit)}, ${Math.round(obs.wallMs)} ms, killed by ${h(obs.killedBy)})</summary>${stream('stdout', obs.stdout)}${stream('stderr', obs.stderr)}</details>`;
}

const todoBox = (lines: readonly string[]): string =>
  lines.length ? `<div class="todo"><strong>What to do</strong><ul>${lines.map((l) => `<li>${h(l)}</li>`).join('')}</ul></div>` : '';

function securityItem(r: SecurityResult, card: SecurityScorecard, anchor: string): string {
  const claim = claimOf(r, card);
  const label = r.waiver ? `${r.verdict} (waived)` : r.verdict;
  return `<section class="item ${r.verdict}" id="${anchor}">
<h3><span class="badge ${r.waiver ? 'waived' : r.verdict}">${h(label)}</span> ${h(r.id)} <span class="title">${h(r.title)}</span></h3>
<p class="meta">security · ${h(r.category)} · policy item <code>${h(r.policyItem)}</code> · severity ${h(r.severity)} · <span class="${claim === 'false claim' ? 'false-claim' : ''}">${claim === 'false claim' ? 'FALSE CLAIM' : claim}</span> · ${h(attack(r))} · fingerprint ${h(evidenceFingerprint(r))}</p>
<p class="reason">${h(r.reason)}</p>
${todoBox(securityTodo(r, card))}
${r.harnessError ? `<p class="muted">harness error ${h(r.harnessError.code)}: ${h(r.harnessError.message)}</p>` : ''}
${evidenceList(r.evidence)}
${boxOutput(r.observation)}
</section>`;
}

function taskItem(r: TaskResult, card: SecurityScorecard, anchor: string): string {
  const attempts = r.attempts.map(
    (a) => `attempt ${a.attempt}: ${a.verdict} (${a.exitCode !== null ? `exit ${a.exitCode}` : `signal ${a.signal ?? '?'}`}) ${a.reason}`,
  );
  return `<section class="item ${r.outcome}" id="${anchor}">
<h3><span class="badge ${r.outcome}">${h(r.outcome)}</span> ${h(r.id)} <span class="title">${h(r.title)}</span></h3>
<p class="meta">task · policy item <code>${h(r.policyItem)}</code> · expected ${h(r.expected)}, got ${h(r.verdict ?? 'no verdict')}</p>
<p class="reason">${h(r.reason)}</p>
${todoBox(taskTodo(r, card))}
${attempts.length ? `<pre>${hBlock(attempts.join('\n'))}</pre>` : ''}
${evidenceList(r.evidence)}
${boxOutput(r.observation, r.outcome === 'unexpected')}
</section>`;
}

const needsLook = (r: SecurityResult): boolean => r.verdict === 'crossed' || r.verdict === 'unenforced' || r.verdict === 'inconclusive';
const taskNeedsLook = (r: TaskResult): boolean => r.outcome === 'unexpected' || r.outcome === 'error';

/** Failures first (crossed, unenforced, wrong task verdicts), then what could not be shown (inconclusive, harness errors), waived last. */
function attention(c: Cards, anchors: Map<object, string>): string {
  const sec = c.security.results.filter(needsLook).sort(securityOrder);
  const failing = sec.filter((r) => r.verdict !== 'inconclusive' && !r.waiver);
  const unclear = sec.filter((r) => r.verdict === 'inconclusive');
  const waived = sec.filter((r) => r.waiver && r.verdict !== 'inconclusive');
  const tasks = c.task.results.filter(taskNeedsLook).sort(taskOrder);
  const item = (r: SecurityResult) => securityItem(r, c.security, anchors.get(r) ?? '');
  const titem = (r: TaskResult) => taskItem(r, c.security, anchors.get(r) ?? '');
  const parts = [
    ...failing.map(item),
    ...tasks.filter((r) => r.outcome === 'unexpected').map(titem),
    ...unclear.map(item),
    ...tasks.filter((r) => r.outcome === 'error').map(titem),
    ...waived.map(item),
  ];
  const count = parts.length;
  if (count === 0) return '<h2 id="attention">Needs a look</h2><p class="ok">Nothing crossed, unenforced or inconclusive; every task verdict as expected.</p>';
  return `<h2 id="attention">Needs a look (${count})</h2>\n${parts.join('\n')}`;
}

function securityTable(c: Cards, anchors: Map<object, string>): string {
  const rows = [...c.security.results].sort(securityOrder).map((r) => {
    const anchor = anchors.get(r);
    const claim = claimOf(r, c.security);
    const id = anchor ? `<a href="#${anchor}">${h(r.id)}</a>` : h(r.id);
    const folded = anchor || r.evidence.length === 0 ? '' : `<details><summary>evidence</summary>${evidenceList(r.evidence)}</details>`;
    return `<tr><td class="v ${r.waiver ? 'waived' : r.verdict}">${h(r.waiver ? `${r.verdict} (waived)` : r.verdict)}</td><th>${id}</th><td>${h(r.category)}</td><td><code>${h(r.policyItem)}</code></td><td class="${claim === 'false claim' ? 'false-claim' : ''}">${claim}</td><td>${h(r.severity)}</td><td>${h(r.reason.slice(0, 400))}${folded}</td></tr>`;
  });
  return `<h2 id="security">Security card: ${h(securityCounts(c.security.summary))}</h2>
<table><tr><th>verdict</th><th>probe</th><th>category</th><th>policy item</th><th>claim</th><th>severity</th><th>reason</th></tr>${rows.join('')}</table>`;
}

function taskTable(c: Cards, anchors: Map<object, string>): string {
  if (c.task.results.length === 0) return '<h2 id="task">Task card</h2><p class="muted">No task case ran.</p>';
  const rows = [...c.task.results].sort(taskOrder).map((r) => {
    const anchor = anchors.get(r);
    const id = anchor ? `<a href="#${anchor}">${h(r.id)}</a>` : h(r.id);
    const replay = r.reproducible === null ? '–' : r.reproducible ? 'reproducible' : 'NOT reproducible';
    return `<tr><td class="v ${r.outcome}">${h(r.outcome)}</td><th>${id}</th><td>${h(r.expected)}</td><td>${h(r.verdict ?? 'no verdict')}</td><td>${r.attempts.length}</td><td>${replay}</td><td>${h(r.reason.slice(0, 400))}</td></tr>`;
  });
  return `<h2 id="task">Task card: ${h(taskCounts(c.task.summary))}</h2>
<table><tr><th>outcome</th><th>case</th><th>expected</th><th>verdict</th><th>attempts</th><th>replay</th><th>reason</th></tr>${rows.join('')}</table>`;
}

function claimsTable(card: SecurityScorecard): string {
  const claims = claimsOf(card);
  if (claims.length === 0) return `<h2 id="claims">Claims</h2><p>${h(card.backend.name)} claims to enforce no policy item.</p>`;
  const rows = claims.map(
    (x) =>
      `<tr><th><code>${h(x.item)}</code></th><td class="${x.falseClaim ? 'false-claim' : x.observed === 'held' ? 'held' : ''}">${x.falseClaim ? 'FALSE CLAIM: ' : x.claimed ? '' : 'not claimed, '}observed ${h(x.observed)}</td><td>${h(x.probes.join(', ') || '–')}</td></tr>`,
  );
  return `<h2 id="claims">Claims against what was observed</h2><table><tr><th>policy item (claimed, or run although not claimed)</th><th>observed</th><th>probes</th></tr>${rows.join('')}</table>`;
}

function legend(): string {
  const rows = LEGEND.map(
    (l) =>
      `<tr><td class="v ${l.verdict}">${h(l.verdict === 'false-claim' ? 'FALSE CLAIM' : l.verdict)}</td><td>${l.card}</td><td>${h(l.means)}</td><td>${h(l.todo)}</td></tr>`,
  );
  return `<h2 id="legend">What the verdicts mean</h2>
<p>Verdicts rest on outside evidence (what the harness saw: a canary, a decoy contacted, a host file changed, a counter, its own clock); what a payload printed about itself is inside evidence and never turns a crossing into a pass.</p>
<table><tr><th>verdict</th><th>card</th><th>what it means</th><th>what to do</th></tr>${rows.join('')}</table>`;
}

function header(c: Cards, gate: GateReport | undefined): string {
  const column = buildMatrix([{ kind: 'cards', source: c.dir, ...c }]).columns[0];
  const exit = EXIT_TEXT[exitCodeFor(c.security, c.task)];
  const s = c.security;
  const facts = [
    ...(column ? columnFacts(column) : []),
    `run ${s.run.id}, ${s.run.startedAt} → ${s.run.finishedAt}, sandcheck ${s.run.sandcheckVersion}`,
    `backend config: ${s.environment?.backendConfig ? s.environment.backendConfig.file : 'none (the backend’s defaults)'}; exporter: ${s.run.exporter}`,
    ...(s.run.network ? [`network judged by: ${s.run.network}`] : []),
    ...(column ? [`cold start: ${coldStartText(column)}`] : []),
    ...(s.run.interrupted ? ['INTERRUPTED: probes cut short are inconclusive'] : []),
    ...(s.run.shard ? [`shard ${s.run.shard.index}/${s.run.shard.total} of the selection`] : []),
  ];
  const none =
    s.backend.isolation === 'none'
      ? `<p class="banner crossed">${h(s.backend.name)} isolates NOTHING: it is the positive control, every security probe is expected to cross.</p>`
      : '';
  const gateLine = gate
    ? `<p class="banner ${gate.passed ? 'held' : 'crossed'}">Against the base: ${gate.passed ? 'no unwaived regression' : `${gate.summary.regressions} unwaived regression(s)`} (<a href="#changes">what changed</a>)</p>`
    : '';
  return `<h1>sandcheck report: ${h(column?.header ?? s.backend.name)} under policy ${h(s.policy.name)}</h1>
<p class="banner ${exit.cls}">${h(exit.text)}</p>${none}${gateLine}
<p class="desc">${h(s.backend.description)}</p>
<div class="cards"><div class="card"><strong>Security card</strong><br>${h(securityCounts(s.summary))}</div><div class="card"><strong>Task card</strong><br>${h(taskCounts(c.task.summary))}</div></div>
<p class="muted">Two report cards, never merged: a perfect score on one never stands in for the other. <a href="#attention">Needs a look</a> · ${gate ? '<a href="#changes">Changes against the base</a> · ' : ''}<a href="#security">Security card</a> · <a href="#task">Task card</a> · <a href="#claims">Claims</a> · <a href="#legend">Legend</a></p>
<p class="facts">${facts.map(h).join(' · ')}</p>`;
}

/** The page for one run (`sandcheck report DIR --html`, `sandcheck run --html`). */
export function runHtml(c: Cards, options: RunHtmlOptions = {}): string {
  const anchors = new Map<object, string>();
  c.security.results.filter(needsLook).forEach((r, i) => anchors.set(r, `s${i}`));
  c.task.results.filter(taskNeedsLook).forEach((r, i) => anchors.set(r, `t${i}`));
  const gate = options.base ? gateReport(options.base, { dir: c.dir, security: c.security, task: c.task }) : undefined;
  const now = (options.now ?? new Date()).toISOString();
  const csp = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'; base-uri 'none'";
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${csp}"><meta name="viewport" content="width=device-width">
<title>sandcheck report: ${h(c.security.backend.name)}</title><style>${RUN_HTML_CSS}</style></head>
<body>
${header(c, gate)}
${attention(c, anchors)}
${gate ? baseSection(gate) : ''}
${securityTable(c, anchors)}
${taskTable(c, anchors)}
${claimsTable(c.security)}
${legend()}
<p class="muted">Written ${h(now)} from security.json and task.json.</p>
</body></html>
`;
}
