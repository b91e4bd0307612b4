/** The page's only style (inline: the report loads nothing). Verdict classes match the cards' own words. */
export const RUN_HTML_CSS = `
body{font:14px/1.45 system-ui,sans-serif;margin:1.2em 1.5em;color:#111;background:#fff;max-width:1400px}
h1{font-size:1.45em;margin:.2em 0 .4em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}h3{font-size:1.05em;margin:.2em 0}
table{border-collapse:collapse;margin:.5em 0;width:100%}
th,td{border:1px solid #bbb;padding:.25em .5em;vertical-align:top;text-align:left}
tr>th:first-child,table tr:first-child th{background:#eee}
td.v{font-weight:600;white-space:nowrap}
code{font-family:ui-monospace,monospace;font-size:.95em}
pre{white-space:pre-wrap;word-break:break-all;background:#f6f6f6;border:1px solid #ddd;padding:.4em;margin:.2em 0 .6em;font-size:.9em;max-height:24em;overflow:auto}
.held,.as-expected{background:#d8f0d8}
.crossed,.unexpected,.false-claim{background:#f6c4c4;color:#700}
.unenforced{background:#f9d9b5;color:#703c00}
.inconclusive,.error{background:#f7efb0;color:#5a4a00}
.not-applicable{background:#e6e6e6;color:#444}
.waived{background:#e4dcf4;color:#3c2a6a}
.banner{padding:.5em .7em;border-radius:4px;font-weight:600;margin:.4em 0}
.cards{display:flex;gap:1em;margin:.6em 0}.card{flex:1;border:1px solid #bbb;border-radius:4px;padding:.5em .7em}
.facts{font-size:.85em;color:#333;margin:.3em 0}
ul.facts{padding-left:1.2em}
.muted{color:#555;font-size:.9em}.desc{color:#333}.ok{font-weight:600}
.item{border:1px solid #bbb;border-left:8px solid #999;border-radius:4px;padding:.5em .8em;margin:.8em 0;background:#fff;color:#111}
.item.crossed,.item.unexpected{border-left-color:#c00}.item.unenforced{border-left-color:#d67a00}.item.inconclusive,.item.error{border-left-color:#c8a800}
.item.crossed,.item.unexpected{background:#fff6f6}
.item .title{font-weight:400;color:#333}
.badge{display:inline-block;padding:0 .4em;border-radius:3px;font-weight:700;text-transform:uppercase;font-size:.85em}
.meta{font-size:.85em;color:#333;margin:.2em 0}.meta .false-claim{font-weight:700;padding:0 .3em}
.reason{margin:.3em 0;font-weight:500}
.todo{background:#eef4ff;border:1px solid #9bb7e0;border-radius:4px;padding:.3em .6em;margin:.4em 0}.todo ul{margin:.2em 0;padding-left:1.2em}
.evidence{list-style:none;padding:0;margin:.3em 0}.evidence li{margin:.2em 0}
.detail{font-family:ui-monospace,monospace;font-size:.9em}
.src{font-size:.8em;font-weight:700;text-transform:uppercase;padding:0 .3em;border-radius:3px;background:#dde6f3}
.inside .src{background:#eee;color:#555}
:target{outline:3px solid #f0c000}
`;
