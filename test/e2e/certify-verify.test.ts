import { chmod, cp, readdir, readFile, writeFile } from 'node:fs/promises';
import { execa } from 'execa';
import { existsSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../core/paths.js';
import { RunSummarySchema } from '../../reports/run-summary.js';
import { DoctorReportSchema } from '../../cli/doctor.js';
import { manifestText, verifyBundle } from '../../reports/bundle.js';
import { CLI, sandcheck, tempOut } from '../helpers/cli.js';

/** The published JSON Schema file (reports/schema/NAME) as ajv compiles it. */
function schemaValidator(name: string): (doc: unknown) => boolean {
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
  formats.default(ajv);
  return ajv.compile(JSON.parse(readFileSync(join(packageRoot(), 'reports', 'schema', name), 'utf8')) as object);
}

const ONLY = ['secret-decoy-file', 'identity-uid', 'average-correct'];
const FAKE_KEY = `AKIA${'Q'.repeat(16)}`;

describe('run --json and --certify, verify', () => {
  let bundle = '';
  let out = '';
  let stdout = '';
  let exitCode: number | undefined;

  beforeAll(async () => {
    const root = await tempOut();
    out = join(root, 'out');
    bundle = join(root, 'bundle');
    // A backend configuration that holds a credential-shaped value: the card and the fingerprint keep it redacted.
    await writeFile(join(root, 'process.yaml'), `# deploy key ${FAKE_KEY}\n{}\n`);
    const res = await sandcheck([
      'run',
      '--backend',
      'process',
      '--backend-config',
      join(root, 'process.yaml'),
      '--policy',
      'ci',
      '--only',
      ...ONLY,
      '--out',
      out,
      '--json',
      '--certify',
      bundle,
      '--label',
      'sign-off \u001b[31mrc1',
    ]);
    stdout = res.stdout;
    exitCode = res.exitCode;
    if (exitCode !== 1) throw new Error(`run --certify: exit ${exitCode}\n${res.all}`);
  }, 120_000);

  it('stdout is exactly one JSON summary, valid against its zod schema and the published schema file', () => {
    const doc: unknown = JSON.parse(stdout);
    expect(schemaValidator('run-summary.schema.json')(doc)).toBe(true);
    const summary = RunSummarySchema.parse(doc);
    // The process control isolates nothing: both security probes cross, the task case is as expected.
    expect(summary).toMatchObject({
      exitCode: 1,
      backend: 'process',
      label: 'sign-off rc1',
      security: { total: 2, crossed: 2, held: 0 },
      task: { total: 1, asExpected: 1 },
    });
    expect(summary.certify?.dir).toBe(bundle);
    expect(summary.reports.securityJson).toBe(join(out, 'security.json'));
  });

  it('the bundle holds both cards, both JUnit files, the SARIF, the policy, the fingerprint and the manifest; the fingerprint hashes the payloads', async () => {
    expect((await readdir(bundle)).sort()).toEqual([
      'environment.json',
      'manifest.sha256',
      'policy.json',
      'security.json',
      'security.junit.xml',
      'security.sarif',
      'task.json',
      'task.junit.xml',
    ]);
    const fp = JSON.parse(await readFile(join(bundle, 'environment.json'), 'utf8')) as {
      probes: { id: string; files: { path: string; sha256: string }[] }[];
      backend: { name: string; version: string };
      environment: { label: string; backendConfig?: unknown };
    };
    expect(schemaValidator('environment-fingerprint.schema.json')(fp)).toBe(true);
    expect(fp.probes.map((p) => p.id)).toEqual(ONLY);
    const payload = fp.probes[0]?.files.find((f) => f.path === 'probes/secret-decoy-file/payload.py');
    expect(payload?.sha256).toBe(
      createHash('sha256')
        .update(await readFile(join(packageRoot(), 'probes', 'secret-decoy-file', 'payload.py')))
        .digest('hex'),
    );
    expect(fp.probes[0]?.files.some((f) => f.path === 'probes/secret-decoy-file/probe.ts')).toBe(true);
    expect(fp.backend.version).toMatch(/^Python 3\./);
    expect(fp.environment.label).toBe('sign-off rc1');
    for (const f of await readdir(bundle)) expect(await readFile(join(bundle, f), 'utf8'), f).not.toContain(FAKE_KEY);
    // The file's text is not kept (only its hash and the options the backend applied), so neither is its comment.
    expect(JSON.stringify(fp.environment)).not.toContain('deploy key');
    expect(fp.environment).toMatchObject({ backendConfig: { file: 'process.yaml', options: {}, checkedBy: 'sandcheck' } });
  });

  it('verify passes on the untouched bundle', async () => {
    const res = await sandcheck(['verify', bundle]);
    expect(res.exitCode, res.all).toBe(0);
  });

  it('a one-byte change at the start, middle or end of ANY file is found and the file named', async () => {
    const files = (await readdir(bundle)).sort();
    expect(files).toHaveLength(8);
    for (const file of files) {
      const original = await readFile(join(bundle, file));
      for (const at of [0, Math.floor(original.length / 2), original.length - 1]) {
        const copy = await tempOut();
        await cp(bundle, copy, { recursive: true });
        const changed = Buffer.from(original);
        changed[at] = (changed[at] ?? 0) ^ 0x01;
        await writeFile(join(copy, file), changed);
        // In process (what the CLI calls) for speed; the CLI's exit status on a change is checked once below.
        const problems = await verifyBundle(copy);
        // A changed manifest names itself or the entry whose hash it now misstates.
        if (file !== 'manifest.sha256')
          expect(
            problems.map((p) => p.file),
            `${file} byte ${at}`,
          ).toContain(file);
        else expect(problems.length, `${file} byte ${at}`).toBeGreaterThan(0);
        if (file === 'policy.json' && at === 0) {
          const res = await sandcheck(['verify', copy]);
          expect(res.exitCode, res.all).toBe(1);
          expect(res.stdout).toContain('CHANGED policy.json:');
        }
      }
    }
  }, 120_000);

  it('an added file and a removed file are reported by name', async () => {
    const added = await tempOut();
    await cp(bundle, added, { recursive: true });
    await writeFile(join(added, 'notes.txt'), 'added later\n');
    const a = await sandcheck(['verify', added, '--json']);
    expect(a.exitCode).toBe(1);
    expect(JSON.parse(a.stdout)).toMatchObject({ ok: false, problems: [{ file: 'notes.txt', problem: expect.stringContaining('not in the manifest') }] });
    const removed = await tempOut();
    await cp(bundle, removed, { recursive: true });
    await import('node:fs/promises').then((fs) => fs.rm(join(removed, 'task.junit.xml')));
    const r = await sandcheck(['verify', removed]);
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toContain('CHANGED task.junit.xml: is in the manifest but missing');
  });

  it('a forged verdict with a recomputed manifest is still found: the JUnit file and the summary no longer match the card', async () => {
    const forged = await tempOut();
    await cp(bundle, forged, { recursive: true });
    const card = JSON.parse(await readFile(join(forged, 'security.json'), 'utf8')) as { results: { verdict: string }[] };
    for (const r of card.results) r.verdict = 'held';
    await writeFile(join(forged, 'security.json'), `${JSON.stringify(card, null, 2)}\n`);
    const names = (await readdir(forged)).filter((f) => f !== 'manifest.sha256');
    const entries = await Promise.all(
      names.map(async (file) => ({
        file,
        sha256: createHash('sha256')
          .update(await readFile(join(forged, file)))
          .digest('hex'),
      })),
    );
    await writeFile(join(forged, 'manifest.sha256'), manifestText(entries));
    const res = await sandcheck(['verify', forged]);
    expect(res.exitCode).toBe(1);
    expect(res.stdout).toContain('CHANGED security.junit.xml: is not the JUnit projection of its scorecard');
    expect(res.stdout).toContain('CHANGED security.json: its summary does not count its results');
  });

  it('--certify refuses --waivers and a non-empty directory before anything runs', async () => {
    const root = await tempOut();
    const waivers = join(root, 'waivers.yaml');
    await writeFile(waivers, 'waivers: []\n');
    const w = await sandcheck([
      'run',
      '--backend',
      'process',
      '--policy',
      'ci',
      '--only',
      'identity-uid',
      '--out',
      join(root, 'out'),
      '--certify',
      join(root, 'b'),
      '--waivers',
      waivers,
    ]);
    expect(w.exitCode, w.all).toBe(3);
    expect(w.stderr).toContain('--certify refuses --waivers');
    expect(existsSync(join(root, 'out', 'security.json'))).toBe(false);
    const n = await sandcheck(['run', '--backend', 'process', '--policy', 'ci', '--only', 'identity-uid', '--out', join(root, 'out'), '--certify', bundle]);
    expect(n.exitCode, n.all).toBe(3);
    expect(n.stderr).toContain('is not empty');
  });

  it.runIf(process.getuid?.() === 0)('as an unprivileged user (no lab): --certify refuses before the run, doctor exits 1 naming the lab', async () => {
    const root = await tempOut();
    await chmod(root, 0o777);
    const asNobody = (args: readonly string[]) =>
      execa('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, CLI, ...args], {
        reject: false,
        all: true,
        env: { CI: 'true', HOME: root },
      });
    const run = await asNobody([
      'run',
      '--backend',
      'process',
      '--policy',
      'ci',
      '--only',
      'metadata-ipv4',
      'identity-uid',
      '--out',
      join(root, 'out'),
      '--certify',
      join(root, 'bundle'),
    ]);
    expect(run.exitCode, run.all).toBe(3);
    expect(run.stderr).toContain('--certify refuses a run whose network probes would be skipped: no lab');
    expect(existsSync(join(root, 'out', 'security.json'))).toBe(false);
    expect(existsSync(join(root, 'bundle'))).toBe(false);
    const doc = await asNobody(['doctor', '--backend', 'process', '--json']);
    expect(doc.exitCode, doc.all).toBe(1);
    expect(JSON.parse(doc.stdout)).toMatchObject({ ok: false, chosen: { name: 'process', status: 'ok' }, lab: { status: 'missing' } });
  });

  it('doctor --json: the chosen backend and the lab; exit 1 naming a backend that cannot work', async () => {
    const ok = await sandcheck(['doctor', '--json', '--backend', 'process']);
    const report = DoctorReportSchema.parse(JSON.parse(ok.stdout));
    expect(schemaValidator('doctor-report.schema.json')(report)).toBe(true);
    expect(report.chosen).toMatchObject({ name: 'process', status: 'ok' });
    expect(ok.exitCode).toBe(report.lab.status === 'ok' ? 0 : 1);
    const bad = await sandcheck(['doctor', '--json', '--backend', 'command', '--backend-config', join(packageRoot(), 'test', 'no-such-config.yaml')]);
    expect(bad.exitCode, bad.all).toBe(1);
    expect(JSON.parse(bad.stdout)).toMatchObject({ ok: false, exitCode: 1, chosen: { name: 'command', status: expect.stringMatching(/missing|config/) } });
  });
});
