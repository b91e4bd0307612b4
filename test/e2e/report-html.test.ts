import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { dumpDom, findChromium, screenshot } from '../../scripts/matrix-screenshot.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';

const skip = await bwrapSkipReason();
const chromium = await findChromium();

/** A task case of the user's whose program prints what attacks an HTML viewer: markup, quotes, control bytes, invalid UTF-8. */
const HOSTILE_CASE = String.raw`id: user-hostile-output
title: prints markup, quotes, control bytes and invalid UTF-8
expected: accept
program: |
  import sys
  sys.stdout.buffer.write(b"<script>document.title='pwned'</script></textarea>\"quoted\" 'single' <img src=x onerror=\"document.title='img'\"> nul[\x00] bell[\x07] del[\x7f] bad-utf8[\xff\xfe\xc3\x28]\n")
  sys.stderr.buffer.write(b"</pre><script>document.title='stderr'</script>\xff\n")
predicate:
  type: exact
  artifact: stdout
  value: "never this\n"
`;

const PROBES = ['metadata-ipv4', 'identity-uid'];
const TITLE = '<title>sandcheck report: bwrap</title>';

/** Rows of the screenshot whose pixel at x is the crossed item's bar colour (#c00). */
function redBarRows(png: PNG, x: number): number[] {
  const rows: number[] = [];
  for (let y = 0; y < png.height; y++) {
    const i = (y * png.width + x) * 4;
    if (png.data[i] === 0xcc && png.data[i + 1] === 0 && png.data[i + 2] === 0) rows.push(y);
  }
  return rows;
}

describe.skipIf(skip !== undefined)(`one run's HTML report from a real bwrap run${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let dir = '';
  let base = '';
  let head = '';
  let page = '';

  beforeAll(async () => {
    dir = await tempOut();
    base = join(dir, 'base');
    head = join(dir, 'head');
    await mkdir(join(dir, 'tasks'));
    await writeFile(join(dir, 'tasks', 'hostile.yaml'), HOSTILE_CASE);
    await writeFile(join(dir, 'hardened.yaml'), 'shareNetwork: false\n');
    // The head weakens one control: the box shares the lab's network while the backend still claims network.egress.
    await writeFile(join(dir, 'share.yaml'), 'shareNetwork: true\n');
    const common = ['run', '--backend', 'bwrap', '--policy', 'ci', '--html'];
    const b = await sandcheck([...common, '--backend-config', join(dir, 'hardened.yaml'), '--only', ...PROBES, '--out', base]);
    expect(b.exitCode, b.all?.slice(-3000)).toBe(0);
    const h = await sandcheck([
      ...common,
      '--backend-config',
      join(dir, 'share.yaml'),
      '--tasks',
      join(dir, 'tasks'),
      '--only',
      ...PROBES,
      'user-hostile-output',
      '--out',
      head,
    ]);
    expect(h.exitCode, h.all?.slice(-3000)).toBe(1);
    expect(h.stdout).toContain(`html report: ${join(head, 'report.html')}`);
    const cards = await readCards(head);
    expect(cards.security.results.find((r) => r.id === 'metadata-ipv4')?.verdict).toBe('crossed');
    expect(cards.task.results.find((r) => r.id === 'user-hostile-output')?.outcome).toBe('unexpected');
    page = await readFile(join(head, 'report.html'), 'utf8');
  }, 120_000);

  it('puts the crossing first, with its evidence, remediation and the false claim; both cards, the claims and a legend follow', async () => {
    const cards = await readCards(head);
    const crossing = cards.security.results.find((r) => r.id === 'metadata-ipv4');
    const items = [...page.matchAll(/<section class="item ([a-z-]+)" id="[st]\d+">\s*<h3><span class="badge [a-z-]+">[^<]*<\/span> ([^<]+) </g)].map(
      (m) => `${m[1]}:${m[2]}`,
    );
    expect(items).toEqual(['crossed:metadata-ipv4', 'unexpected:user-hostile-output']);
    const at = (marker: string): number => {
      const i = page.indexOf(marker);
      expect(i, marker).toBeGreaterThan(0);
      return i;
    };
    expect(at('<section class="item crossed"')).toBeLessThan(at('id="security"'));
    expect(at('id="security"')).toBeLessThan(at('id="task"'));
    expect(at('id="task"')).toBeLessThan(at('id="legend"'));
    const item = page.slice(at('<section class="item crossed"'), at('<section class="item unexpected"'));
    expect(item).toContain('FALSE CLAIM');
    expect(item).toContain('What to do');
    expect(item).toContain(crossing?.remediation.replaceAll('&', '&amp;') ?? 'no remediation');
    expect(item).toContain('canary-scan');
    expect(item).toContain('--only metadata-ipv4');
    // The held probe is in the full table only, not among what needs a look.
    expect(page.slice(at('id="security"'))).toMatch(/<td class="v held">held<\/td><th>identity-uid<\/th>/);
    const legend = page.slice(at('id="legend"'));
    for (const v of ['held', 'crossed', 'unenforced', 'inconclusive', 'not-applicable', 'waived', 'FALSE CLAIM', 'unexpected', 'error'])
      expect(legend, v).toContain(`">${v}</td>`);
    expect(legend).toContain('skipped');
  });

  it('is self-contained and escapes every byte of box output: markup, quotes, control bytes and invalid UTF-8 are text', async () => {
    const bytes = await readFile(join(head, 'report.html'));
    // Valid UTF-8, no raw control byte (tab and newline aside).
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(bytes)).not.toThrow();
    expect(page).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    // No script, no element the box's text asked for, nothing loaded from anywhere.
    expect(page).not.toMatch(/<script|<img|<\/textarea|<textarea|<link|@import|url\(/i);
    expect(page).not.toMatch(/\s(src|href|action)\s*=\s*"(?!#)/i);
    expect(page).toContain(`Content-Security-Policy" content="default-src 'none'`);
    expect(page).toContain(
      "&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;/textarea&gt;&quot;quoted&quot; 'single' &lt;img src=x onerror=&quot;document.title='img'&quot;&gt; nul[\\x00] bell[\\x07] del[\\x7f] bad-utf8[\\xff\\xfe\\xc3(]",
    );
    expect(page).toContain("&lt;/pre&gt;&lt;script&gt;document.title='stderr'&lt;/script&gt;\\xff");
  });

  it('--base shows what changed as the gate classifies it: the crossing as a regression and the backend option before → after', async () => {
    const file = join(dir, 'against-base.html');
    const r = await sandcheck(['report', head, '--html', '--base', base, '--html-file', file]);
    expect(r.exitCode, r.all).toBe(0);
    expect(r.stdout).toContain(`wrote ${file}`);
    const html = await readFile(file, 'utf8');
    const changes = html.slice(html.indexOf('id="changes"'), html.indexOf('id="security"'));
    expect(changes).toContain('REGRESSED');
    expect(changes).toMatch(/<td class="v crossed">REGRESSION<\/td><td>security<\/td><th>metadata-ipv4<\/th><td>held → crossed<\/td>/);
    expect(changes).toMatch(/<tr><th>shareNetwork<\/th><td>false<\/td><td>true<\/td><\/tr>/);
    // The run's own page (no --base) has no such section; the base's page has nothing that needs a look.
    expect(page).not.toContain('id="changes"');
    expect(await readFile(join(base, 'report.html'), 'utf8')).toContain('Nothing crossed, unenforced or inconclusive');
    // Usage errors: nothing to write, and --recover mixed with --html.
    expect((await sandcheck(['report', head])).exitCode).toBe(3);
    expect((await sandcheck(['report', '--recover', head, '--html'])).exitCode).toBe(3);
  });

  describe.skipIf(chromium === undefined)(
    `in headless chromium${chromium ? '' : ' (skipped: chromium is not installed: apt-get install -y --no-install-recommends chromium)'}`,
    () => {
      it('no script from box output runs, the crossing is drawn above the fold in the crossed colour (and not on the clean base page)', async () => {
        const dom = await dumpDom(join(head, 'report.html'));
        expect(dom).toContain(TITLE);
        expect(dom).not.toMatch(/<script|<img|<textarea/i);
        expect(dom).toContain("&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;/textarea&gt;");
        // The control: the same text unescaped does run in this browser and does change the title.
        const raw = join(dir, 'raw.html');
        await writeFile(raw, `<!DOCTYPE html><html><head>${TITLE}</head><body><script>document.title='pwned'</script></body></html>`);
        expect(await dumpDom(raw)).toContain('<title>pwned</title>');

        const size = { width: 1280, height: 900 };
        const shot = join(dir, 'report.png');
        await screenshot(join(head, 'report.html'), shot, size);
        const png = PNG.sync.read(await readFile(shot));
        expect([png.width, png.height]).toEqual([size.width, size.height]);
        // The crossed item's left bar (8 px of #c00 inside the page margin) is on the first screen, and tall.
        const bar = redBarRows(png, 25);
        expect(bar.length).toBeGreaterThan(150);
        expect(Math.min(...bar)).toBeLessThan(size.height / 2);
        const clean = join(dir, 'base.png');
        await screenshot(join(base, 'report.html'), clean, size);
        expect(redBarRows(PNG.sync.read(await readFile(clean)), 25)).toEqual([]);
        if (process.env['SANDCHECK_KEEP_SCREENSHOT']) await writeFile(process.env['SANDCHECK_KEEP_SCREENSHOT'], await readFile(shot));
      }, 120_000);
    },
  );
});
