import { configLabel, type Change, type GateReport } from '../gate.js';
import { gateSummaryLines, statusOf, waiverLines } from '../gate-render.js';
import { h } from './html-text.js';

/** The class a change row is drawn with: failures red, waived or below --fail-on amber, improvements green. */
function changeClass(c: Change): string {
  if (c.class === 'regression') return c.waiver || c.belowFailOn ? 'inconclusive' : 'crossed';
  if (c.expiredWaiver) return 'crossed';
  return c.class === 'improvement' ? 'held' : 'not-applicable';
}

/** What changed against the base run, as `sandcheck compare --base --head` classifies it (reports/gate.ts). */
export function baseSection(g: GateReport): string {
  const changes = g.changes.filter((c) => c.class !== 'unchanged' || c.expiredWaiver);
  const rows = changes.map(
    (c) =>
      `<tr><td class="v ${changeClass(c)}">${h(statusOf(c))}</td><td>${h(c.kind)}</td><th>${h(c.id)}</th><td>${h(c.base ?? 'absent')} → ${h(c.head ?? 'absent')}</td><td>${h(c.reason.slice(0, 600))}</td></tr>`,
  );
  const d = g.backendConfig;
  const config =
    d.changed && d.options.length
      ? `<h3>Backend configuration: ${h(configLabel(d.base))} → ${h(configLabel(d.head))}</h3><table><tr><th>option</th><th>base</th><th>head</th></tr>${d.options
          .map((o) => `<tr><th>${h(o.path)}</th><td>${h(o.base)}</td><td>${h(o.head)}</td></tr>`)
          .join('')}</table>`
      : '';
  return `<h2 id="changes">Changes against the base: ${g.passed ? 'no unwaived regression' : 'REGRESSED'}</h2>
<ul class="facts">${[...gateSummaryLines(g), ...waiverLines(g)].map((l) => `<li>${h(l)}</li>`).join('')}</ul>
${rows.length ? `<table><tr><th>status</th><th>kind</th><th>id</th><th>base → head</th><th>reason</th></tr>${rows.join('')}</table>` : '<p>No verdict, claim, policy field or backend option changed.</p>'}
${config}
<p class="muted">The same classification as <code>sandcheck compare --base … --head …</code>, which is the gate (its exit code); this page only shows it.</p>`;
}
