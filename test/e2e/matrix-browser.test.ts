import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeMatrix } from '../../cli/matrix-command.js';
import { buildMatrix } from '../../reports/matrix-model.js';
import { dumpDom, findChromium, screenshot } from '../../scripts/matrix-screenshot.js';
import { cards, matrixFixture, sec } from '../helpers/matrix-fixtures.js';
import { sandcheck } from '../helpers/cli.js';

const chromium = await findChromium();
const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

const ATTACK = "<script>document.title='pwned'</script>";

describe.skipIf(chromium === undefined)(
  `matrix.html in a real browser${chromium ? '' : ' (skipped: chromium is not installed: apt-get install -y --no-install-recommends chromium)'}`,
  () => {
    it('evidence holding a <script> is shown as text: no script element from evidence, the title unchanged; the screenshot is a PNG', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'sandcheck-matrix-browser-'));
      dirs.push(dir);
      const evil = sec('metadata-ipv4', 'crossed', 'network', {
        reason: `payload said ${ATTACK}`,
        evidence: [{ source: 'inside', witness: 'payload-report', where: 'stdout', detail: `${ATTACK} "quoted" <img src=x onerror="document.title='img'">` }],
      });
      const m = buildMatrix([
        cards('process', [evil], [], { isolation: 'none' }),
        cards('bwrap', [sec('metadata-ipv4', 'held', 'network', { policyItem: 'network.egress' })], [], { enforces: ['network.egress'] }),
      ]);
      const files = await writeMatrix(dir, m);
      const dom = await dumpDom(files.html);
      expect(dom).toContain('<title>sandcheck matrix</title>');
      expect(dom).not.toMatch(/<script/i);
      expect(dom).not.toMatch(/<img/i);
      const body = dom.slice(dom.indexOf('<body'));
      expect(body).toContain("&lt;script&gt;document.title='pwned'&lt;/script&gt;");
      expect(body).toContain('&lt;img src=x');
      // The control: the same text unescaped does run in this browser and does change the title.
      const raw = join(dir, 'raw.html');
      await writeFile(raw, `<!DOCTYPE html><html><head><title>sandcheck matrix</title></head><body>${ATTACK}</body></html>`);
      expect(await dumpDom(raw)).toContain('<title>pwned</title>');
      const png = join(dir, 'matrix.png');
      const shot = await screenshot(files.html, png, { width: 1200, height: 800 });
      expect(shot.bytes).toBeGreaterThan(1000);
      expect((await readFile(png)).subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    }, 120_000);

    it('sandcheck matrix --png writes the picture of matrix.html as the command makes it (how docs/matrix-example.png is made)', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'sandcheck-matrix-png-'));
      dirs.push(dir);
      const runs: string[] = [];
      for (const input of matrixFixture()) {
        if (input.kind !== 'cards') continue;
        const run = join(dir, input.security.backend.name);
        await mkdir(run);
        await writeFile(join(run, 'security.json'), JSON.stringify(input.security));
        await writeFile(join(run, 'task.json'), JSON.stringify(input.task));
        runs.push(run);
      }
      const png = join(dir, 'shot.png');
      const r = await sandcheck(['matrix', ...runs, '--out', join(dir, 'm'), '--png', png, '--png-size', '1000x700']);
      expect(r.exitCode, r.all).toBe(0);
      expect(r.stdout).toContain(`matrix picture: ${png}`);
      expect((await readFile(png)).subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
      // A picture that cannot be written is refused before anything runs: no matrix directory either.
      const refused = await sandcheck(['matrix', ...runs, '--out', join(dir, 'm2'), '--png', join(dir, 'missing', 'shot.png')]);
      expect(refused.exitCode, refused.all).toBe(3);
      expect(refused.stderr).toContain('its directory does not exist');
      await expect(readFile(join(dir, 'm2', 'matrix.html'))).rejects.toThrow();
    }, 120_000);
  },
);
