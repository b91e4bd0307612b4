import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ProcessBackend } from '../../backends/process/process-backend.js';
import { resolveExporter, exporterName, type ExporterChoice } from '../../harness/export/exporter-choice.js';
import { StagingManifestSchema, writeStaging } from '../../harness/export/staging.js';
import { SandcheckError } from '../../core/errors.js';
import { CI_POLICY } from '../../model/policy.js';
import { openRunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { exportProbes } from '../../suites/export.js';

const temps: string[] = [];
/** A temporary directory of this file's tests, removed after them. */
async function tempDir(prefix: string): Promise<string> {
  const d = await mkdtemp(prefix);
  temps.push(d);
  return d;
}
afterAll(async () => {
  await Promise.all(temps.map((d) => rm(d, { recursive: true, force: true })));
});

const isRoot = process.getuid?.() === 0;
const FOLLOW = 'command:examples/exporters/follow-links.yaml';
const CAREFUL = 'command:examples/exporters/regular-files-only.yaml';

async function run(exporter: ExporterChoice, runId: string) {
  const ctx = await openRunContext(runId);
  try {
    return await new Runner({ backend: new ProcessBackend(), policy: CI_POLICY, probes: exportProbes, run: ctx, concurrency: 2, exporter }).run();
  } finally {
    await ctx.dispose();
  }
}

describe('the exporter under test', () => {
  it('refuses a command exporter file with an unknown placeholder before anything runs', async () => {
    const dir = await tempDir(join(tmpdir(), 'sc-exp-'));
    await writeFile(join(dir, 'bad.yaml'), 'argv: ["python3", "x.py", "{workspace}"]\n');
    const err = await resolveExporter(`command:${join(dir, 'bad.yaml')}`).catch((e: unknown) => e);
    expect(err instanceof SandcheckError && err.code).toBe('CONFIG_INVALID');
    expect(String(err)).toMatch(/bad\.yaml: argv\[2\]: unknown placeholder \{workspace\}/);
  });

  it('loads a module exporter (default export: an exporter or a factory of one) and refuses anything else', async () => {
    const dir = await tempDir(join(tmpdir(), 'sc-modexp-'));
    await writeFile(
      join(dir, 'good.mjs'),
      "export default async () => ({ name: 'mod-exp', async export() { return { accepted: false, exported: [], refusals: [], findings: [] }; } });\n",
    );
    await writeFile(join(dir, 'bad.mjs'), 'export default { name: 42 };\n');
    expect(exporterName(await resolveExporter(join(dir, 'good.mjs')))).toBe('mod-exp');
    const err = await resolveExporter(join(dir, 'bad.mjs')).catch((e: unknown) => e);
    expect(err instanceof SandcheckError && err.code).toBe('CONFIG_INVALID');
  });

  it('stages hostile kinds as data: only plain files the harness made, names and link targets in the manifest', async () => {
    const dir = join(await tempDir(join(tmpdir(), 'sc-stg-')), 'in');
    const m = await writeStaging(
      dir,
      [
        { path: '../../etc/passwd', kind: 'file', size: 2, content: new Uint8Array([104, 105]) },
        { path: 'result.txt', kind: 'symlink', size: 0, linkTarget: '/etc/shadow' },
        { path: 'pipe', kind: 'fifo', size: 0 },
      ],
      { maxFiles: 20, maxFileBytes: 1, maxTotalBytes: 2 },
    );
    expect(StagingManifestSchema.parse(JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')))).toEqual(m);
    const files = await readdir(join(dir, 'files'), { withFileTypes: true });
    expect(files.map((f) => [f.name, f.isFile()])).toEqual([['000000', true]]);
    expect(m.entries.map((e) => [e.path, e.kind, e.file ?? null, e.linkTarget ?? null])).toEqual([
      ['../../etc/passwd', 'file', 'files/000000', null],
      ['result.txt', 'symlink', null, '/etc/shadow'],
      ['pipe', 'fifo', null, null],
    ]);
  });

  it.skipIf(!isRoot)(
    'catches a command exporter that follows symlinks; a link-refusing one holds on links but is caught on archives; the reference holds; results name the exporter',
    async () => {
      const follow = await resolveExporter(FOLLOW);
      expect(exporterName(follow)).toBe('follow-links');
      const naive = await run(follow, 'cexp1');
      const byId = new Map(naive.security.map((r) => [r.id, r]));
      for (const id of ['export-symlink-host', 'export-symlink-dir']) {
        const r = byId.get(id);
        expect(`${id}: ${r?.verdict}: ${r?.reason}`).toMatch(new RegExp(`${id}: crossed: the follow-links exporter`));
        // Outside evidence: the canary found in what the exporter wrote, and the exporter named in its line.
        expect(r?.evidence.some((e) => e.source === 'outside' && e.witness === 'exporter' && e.detail.startsWith('follow-links exporter'))).toBe(true);
      }
      // Regular files only and contained paths, but no look inside: the archive and content probes catch exactly that.
      const careful = await run(await resolveExporter(CAREFUL), 'cexp2');
      const crossed = careful.security.filter((r) => r.verdict !== 'held').map((r) => `${r.id}: ${r.verdict}`);
      expect(crossed.sort()).toEqual(
        ['archive-absolute', 'archive-dotdot', 'archive-symlink-then-write', 'export-type-smuggling', 'zip-slip'].map((id) => `${id}: crossed`),
      );
      for (const id of ['export-symlink-host', 'export-symlink-dir', 'export-hardlink', 'export-special-files', 'export-huge-file', 'export-many-small']) {
        expect(careful.security.find((r) => r.id === id)?.reason, id).toMatch(/the regular-files-only exporter refused .*exporter-refused/);
      }
      const reference = await run('reference', 'cexp3');
      expect(reference.security.filter((r) => r.verdict !== 'held').map((r) => r.id)).toEqual([]);
      expect(reference.security.every((r) => r.reason.includes('the reference exporter'))).toBe(true);
    },
    240_000,
  );
});
