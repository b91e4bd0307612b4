import type { MatrixCell, MatrixColumn, MatrixReport } from './matrix-model.js';
import { COLD_START_NOTE, cellVerdict, claimRows, claimText, coldStartText, columnFacts, columnTitle, rankingRows } from './matrix-markdown.js';
import { MATRIX_LEGEND } from './matrix-recommend.js';
import { htmlText } from './markdown-text.js';
import { visibleLine } from '../core/clean-text.js';

/**
 * `matrix.html`: one self-contained file (inline CSS, no script, no external resource). Every text that
 * came from a scorecard goes through `h` (cleaned, `& < > "` as entities): a payload that printed
 * `<script>` shows as text.
 */

const h = (text: string): string => htmlText(visibleLine(text));
const hBlock = (text: string): string => htmlText(text);

const CSS = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#111;background:#fff}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #bbb;padding:.25em .5em;vertical-align:top;text-align:left}
th{background:#eee}
td.v{font-weight:600;white-space:nowrap}
.v a{color:inherit;text-decoration:none}
.held,.accepted-ok{background:#d8f0d8}
.crossed,.unexpected,.false{background:#f6c4c4;color:#700}
.unenforced{background:#f9d9b5;color:#703c00}
.inconclusive,.error{background:#f7efb0;color:#5a4a00}
.not-applicable{background:#e6e6e6;color:#444}
.unavailable{background:#ddd;color:#555;font-style:italic}
tr.differs th{border-left:4px solid #c00}
tr.group th{background:#d6dbe6;font-size:1.05em}
.score{font-family:ui-monospace,monospace;white-space:nowrap}
.facts{font-size:.85em;color:#333}
pre{white-space:pre-wrap;word-break:break-all;background:#f6f6f6;border:1px solid #ddd;padding:.5em;margin:.3em 0 1em}
.ev{border-top:1px solid #ccc;padding-top:.3em}
.ev:target{background:#ffffd0}
.tool{font-weight:400;font-size:.9em}
.rule,.summary{max-width:70em}
.summary p{margin:.4em 0}
td.n{text-align:right;font-family:ui-monospace,monospace}
`;

function verdictClass(cell: MatrixCell | null): string {
  if (!cell) return '';
  if (cell.outcome === 'unexpected') return 'unexpected';
  if (cell.outcome === 'error') return 'error';
  return cell.outcome === 'as-expected' ? 'accepted-ok' : cell.verdict;
}

function header(c: MatrixColumn): string {
  const tool = c.toolShort ? `<div class="tool">${h(c.toolShort)}</div>` : '';
  return `<th${c.status === 'unavailable' ? ' class="unavailable"' : ''}>${h(c.header)}${tool}<div class="facts">${columnFacts(c).map(h).join('<br>')}</div></th>`;
}

const scoreClass = (c: MatrixColumn): string =>
  c.status === 'unavailable'
    ? ' unavailable'
    : (c.security?.crossed ?? 0) + (c.security?.unenforced ?? 0) + (c.task?.unexpected ?? 0) > 0
      ? ' crossed'
      : (c.security?.inconclusive ?? 0) + (c.task?.error ?? 0) > 0
        ? ' inconclusive'
        : ' held';

function summaryTable(m: MatrixReport): string {
  const rows = m.columns.map((c) => {
    const claims = c.status === 'unavailable' ? '–' : c.falseClaims ? `<span class="false">${c.falseClaims} FALSE CLAIM(S)</span>` : '0';
    return `<tr><th>${h(c.header)}</th><td class="score${scoreClass(c)}">${c.score.split(' | ').map(h).join('<br>')}</td><td>${c.status === 'ran' ? h(coldStartText(c, m)) : '–'}</td><td>${claims}</td><td class="facts">${columnFacts(c).map(h).join('<br>')}</td></tr>`;
  });
  return `<h2>Totals</h2><p class="rule">${h(COLD_START_NOTE)}</p><table><tr><th>backend</th><th>score: security, then task</th><th>cold start</th><th>false claims</th><th>facts</th></tr>${rows.join('')}</table>`;
}

/** The ranking (rule stated above it), then one paragraph per backend in the same order. */
function rankingSection(m: MatrixReport): string {
  const ranked = rankingRows(m);
  const rows = ranked.map(({ rank, column: c, key }) => {
    const counts = c.outcomes
      ? [
          ...key.map((n, i) => `<td class="n${n > 0 ? (i === 0 ? ' crossed' : i === 1 ? ' inconclusive' : '') : ''}">${n}</td>`),
          `<td class="n${c.falseClaims ? ' false' : ''}">${c.falseClaims}</td>`,
          `<td class="n">${c.outcomes.ran}</td>`,
        ]
      : ['<td class="unavailable" colspan="6">unavailable</td>'];
    return `<tr><td class="n">${h(rank)}</td><th>${h(columnTitle(c))}</th>${counts.join('')}</tr>`;
  });
  const paragraphs = ranked.map(({ rank, column: c }) => `<p><strong>${h(rank)}. ${h(columnTitle(c))}</strong>: ${h(c.summary)}</p>`);
  return `<h2>Ranking</h2><p class="rule">${h(m.ranking.rule)}</p><table><tr><th>rank</th><th>backend</th><th>crossed</th><th>inconclusive</th><th>held, not claimed</th><th>unenforced</th><th>false claims</th><th>probes ran</th></tr>${rows.join('')}</table>
<h2>What each backend stops and lets through</h2><div class="summary">${paragraphs.join('')}</div>`;
}

function legendSection(): string {
  const rows = MATRIX_LEGEND.map((l) => `<tr><td class="v${l.cls ? ` ${l.cls}` : ''}">${h(l.term)}</td><td>${h(l.meaning)}</td></tr>`);
  return `<h2>Legend</h2><table>${rows.join('')}</table>`;
}

/** One table: a header per backend (name and facts), a row per probe, a separator row per category. */
function verdictTable(m: MatrixReport): string {
  const groups = [...new Set(m.rows.map((r) => r.group))];
  const span = m.columns.length + 1;
  const body = groups.flatMap((g) => [
    `<tr class="group"><th colspan="${span}">${g === 'task' ? 'Task cases' : `Security: ${h(g)}`}</th></tr>`,
    ...m.rows
      .filter((r) => r.group === g)
      .map((r) => {
        const cells = r.cells.map((x, i) => {
          if (m.columns[i]?.status === 'unavailable') return '<td class="v unavailable">unavailable</td>';
          if (!x) return '<td class="v">–</td>';
          return `<td class="v ${verdictClass(x)}"><a href="#${x.anchor}">${h(cellVerdict(x))}</a></td>`;
        });
        return `<tr${r.differs ? ' class="differs"' : ''}><th title="${h(r.title)}">${h(r.id)}</th>${cells.join('')}</tr>`;
      }),
  ]);
  return `<h2>Verdicts</h2><table><tr><th>probe</th>${m.columns.map(header).join('')}</tr>${body.join('')}</table>`;
}

function claimsSection(m: MatrixReport): string {
  const rows = claimRows(m);
  if (rows.length === 0) return '<p>No backend claims to enforce any policy item.</p>';
  const body = rows.map((r) => {
    const cells = r.cells.map((x, i) => {
      const col = m.columns[i];
      const cls =
        col?.status === 'unavailable'
          ? 'unavailable'
          : !x
            ? 'not-applicable'
            : x.falseClaim || (!x.claimed && x.observed === 'crossed')
              ? 'false'
              : x.observed === 'held'
                ? 'held'
                : '';
      return `<td class="${cls}">${x?.falseClaim ? '<strong>FALSE CLAIM</strong>: ' : ''}${h(claimText(x ? { ...x, falseClaim: false } : null, col))}</td>`;
    });
    return `<tr><th>${h(r.item)}</th>${cells.join('')}</tr>`;
  });
  return `<table><tr><th>policy item</th>${m.columns.map((c) => `<th>${h(columnTitle(c))}</th>`).join('')}</tr>${body.join('')}</table>`;
}

function evidenceSection(m: MatrixReport): string {
  return m.rows
    .flatMap((r) =>
      r.cells.map((x, i) => {
        if (!x) return '';
        return `<div class="ev" id="${x.anchor}"><strong>${h(r.id)}</strong> on ${h(m.columns[i]?.header ?? '')}: <span class="${verdictClass(x)}">${h(cellVerdict(x))}</span> — ${h(x.reason)}${x.evidence.length ? `<pre>${hBlock(x.evidence.join('\n'))}</pre>` : ''}</div>`;
      }),
    )
    .join('\n');
}

export function matrixHtml(m: MatrixReport): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>sandcheck matrix</title><style>${CSS}</style></head>
<body>
<h1>sandcheck matrix</h1>
<p>Generated ${h(m.generatedAt)}. Two report cards per backend, never merged: the security score leads with crossed and inconclusive counts. A verdict links to its evidence.</p>
${rankingSection(m)}
${summaryTable(m)}
${legendSection()}
${verdictTable(m)}
<h2>Claims against what was observed</h2>
${claimsSection(m)}
<h2>Evidence</h2>
${evidenceSection(m)}
</body></html>
`;
}
