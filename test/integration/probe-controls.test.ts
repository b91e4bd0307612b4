/**
 * Positive and negative controls of the probes issue 10 found unable to cross or held by the wrong cause
 * (identity judged on the box's own program, identity-setuid, read-only inputs, the CPU quota, disk-fill),
 * each on the `process` control, on a bwrap variant without exactly its control, and on hardened bwrap.
 * Each describe runs only the probes it names (one Runner run per backend variant).
 */
import { randomBytes } from 'node:crypto';
import { chmod } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import createBwrapBackend, { type BwrapOptions } from '../../backends/bwrap/index.js';
import type { Backend, Environment } from '../../model/backend-contract.js';
import { findBinary } from '../../core/find-binary.js';
import { ProcessBackend } from '../../backends/process/process-backend.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { SecurityProbe } from '../../model/probe.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { openRunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { securitySuite } from '../../suites/security.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';

const SKIP = await bwrapSkipReason();
const PREFIX = `rpc${randomBytes(2).toString('hex')}`;
let seq = 0;
const byId = new Map(securitySuite.map((p) => [p.id, p]));

export const explain = (r: SecurityResult): string =>
  `${r.id}: ${r.verdict}: ${r.reason}\n  ${r.evidence.map((e) => `[${e.source} ${e.witness}${e.where ? ` @ ${e.where}` : ''}] ${e.detail.slice(0, 240)}`).join('\n  ')}`;

function probes(ids: readonly string[]): SecurityProbe[] {
  return ids.map((id) => {
    const p = byId.get(id);
    if (!p) throw new Error(`${id} is not in the security suite`);
    return p;
  });
}

async function runOn(backend: Backend | BwrapOptions, ids: readonly string[], policy: Policy = CI_POLICY): Promise<Map<string, SecurityResult>> {
  const b = 'capabilities' in backend ? backend : await createBwrapBackend(backend);
  const run = await openRunContext(`${PREFIX}${(seq++).toString(36)}`);
  try {
    const { security } = await new Runner({ backend: b, policy, probes: probes(ids), run, concurrency: 1 }).run();
    return new Map(security.map((r) => [r.id, r]));
  } finally {
    await run.dispose();
  }
}

function verdict(results: Map<string, SecurityResult>, id: string): SecurityResult {
  const r = results.get(id);
  if (!r) throw new Error(`${id} did not run`);
  return r;
}

const IDENTITY = ['identity-uid', 'identity-capabilities', 'identity-no-new-privs', 'identity-setuid'];
const BOX_UID = 65529;

/**
 * The setuid mechanism itself, shown crossing: the process control with its program dropped to an
 * unprivileged uid by setpriv *without* no_new_privs, on a host directory (no nosuid), and read-only inputs
 * kept with their special bits. No bwrap variant can do this (bwrap always sets NO_NEW_PRIVS and mounts
 * nosuid), and the plain control is root already.
 */
function processDroppedToBoxUid(setpriv: string): Backend {
  const inner = new ProcessBackend();
  return {
    name: 'process-uid-drop',
    description: 'test only: the process control, its program run as an unprivileged uid without no_new_privs',
    capabilities: (policy) => inner.capabilities(policy),
    preflight: () => inner.preflight(),
    async create(policy, ctx): Promise<Environment> {
      await chmod(ctx.scratchDir, 0o711);
      const env = await inner.create(policy, ctx);
      const work = env.hostWorkspace;
      if (work === undefined) throw new Error('the process control names its workspace');
      await chmod(dirname(work), 0o711);
      await chmod(work, 0o755);
      return {
        id: env.id,
        hostWorkspace: work,
        async putFiles(files) {
          await env.putFiles(files);
          for (const f of files) if (f.readOnly && f.mode !== undefined) await chmod(join(work, f.path), f.mode & 0o7555);
        },
        exec: (req) =>
          env.exec({ ...req, argv: [setpriv, `--reuid=${BOX_UID}`, `--regid=${BOX_UID}`, '--clear-groups', '/usr/bin/python3', ...req.argv.slice(1)] }),
        getFiles: (paths, o) => env.getFiles(paths, o),
        hostPids: () => env.hostPids?.() ?? Promise.resolve([]),
        destroy: () => env.destroy(),
      };
    },
  };
}

describe.skipIf(SKIP !== undefined)(`identity judged on the box's own program${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  it('process control: every identity probe crossed, on the payload and the planted binary', async () => {
    const r = await runOn(new ProcessBackend(), IDENTITY);
    for (const id of IDENTITY) expect(verdict(r, id).verdict, explain(verdict(r, id))).toBe('crossed');
    const setuid = verdict(r, 'identity-setuid');
    expect(
      setuid.evidence.some((e) => e.witness === 'host-proc-status' && /suid-sleep/.test(e.detail)),
      explain(setuid),
    ).toBe(true);
  }, 60_000);

  it('hardened bwrap: held, and the planted setuid binary was seen running without euid 0', async () => {
    const r = await runOn({}, IDENTITY);
    for (const id of IDENTITY) expect(verdict(r, id).verdict, explain(verdict(r, id))).toBe('held');
    const setuid = verdict(r, 'identity-setuid');
    expect(
      setuid.evidence.some((e) => e.witness === 'host-proc-status' && /suid-sleep.*euid 65529/.test(e.detail)),
      explain(setuid),
    ).toBe(true);
    // Only the box's own program is judged: bwrap's own processes never appear.
    expect(
      setuid.evidence.filter((e) => e.witness === 'host-proc-status').every((e) => /python3|suid-sleep/.test(e.detail)),
      explain(setuid),
    ).toBe(true);
  }, 60_000);

  it('the setuid bit itself: an unprivileged program without no_new_privs gains euid 0 through the planted binary (crossed)', async () => {
    const setpriv = await findBinary('setpriv');
    if (!setpriv) throw new Error('setpriv is missing');
    const r = await runOn(processDroppedToBoxUid(setpriv), ['identity-uid', 'identity-setuid']);
    // The program itself was not root: only the setuid binary made it so.
    expect(verdict(r, 'identity-uid').verdict, explain(verdict(r, 'identity-uid'))).toBe('held');
    const setuid = verdict(r, 'identity-setuid');
    expect(setuid.verdict, explain(setuid)).toBe('crossed');
    expect(setuid.reason).toMatch(new RegExp(`setuid bit took effect \\(real uid ${BOX_UID}\\)`));
  }, 60_000);

  it('bwrap without the uid drop: identity-setuid crossed (the planted binary ran with euid 0)', async () => {
    const r = await runOn({ unprivilegedUid: null }, ['identity-setuid']);
    const setuid = verdict(r, 'identity-setuid');
    expect(setuid.verdict, explain(setuid)).toBe('crossed');
    expect(setuid.reason).toMatch(/planted setuid-root binary ran with euid 0/);
  }, 60_000);
});

describe.skipIf(SKIP !== undefined)(`read-only inputs checked from outside by their bytes${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  it('crossed on the process control and on bwrap with readOnlyInputs ignored; held on hardened bwrap', async () => {
    const control = verdict(await runOn(new ProcessBackend(), ['read-only-input']), 'read-only-input');
    expect(control.verdict, explain(control)).toBe('crossed');
    const weak = verdict(await runOn({ readOnlyInputs: 'ignored' }, ['read-only-input']), 'read-only-input');
    expect(weak.verdict, explain(weak)).toBe('crossed');
    expect(
      weak.evidence.some((e) => e.source === 'outside' && e.witness === 'input-hashes' && /changed/.test(e.detail)),
      explain(weak),
    ).toBe(true);
    const hardened = verdict(await runOn({}, ['read-only-input']), 'read-only-input');
    if (process.env.SC_DEBUG) console.log([control, weak, hardened].map(explain).join('\n'));
    expect(hardened.verdict, explain(hardened)).toBe('held');
    expect(
      hardened.evidence.some((e) => e.witness === 'input-hashes' && /7 of 7/.test(e.detail)),
      explain(hardened),
    ).toBe(true);
  }, 90_000);
});

/**
 * cpus 0.1: far below the host's cores, and below the share of one task on a busy machine (a box's cgroup
 * competes with the host's tasks as one of them), so the quota can act, or be shown missing, under load.
 */
const LOW_CPU: Policy = { ...CI_POLICY, resources: { ...CI_POLICY.resources, cpus: 0.1 } };

describe.skipIf(SKIP !== undefined)(`CPU quota measured from the cgroup${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  it('cpus: 0.1 — crossed on bwrap without the quota (counters still read), held on hardened bwrap with throttling counted', async () => {
    const weak = verdict(await runOn({ limits: { cpu: false }, misdeclare: true }, ['cpu-quota'], LOW_CPU), 'cpu-quota');
    const hardened = verdict(await runOn({}, ['cpu-quota'], LOW_CPU), 'cpu-quota');
    if (process.env.SC_DEBUG) console.log([weak, hardened].map(explain).join('\n'));
    expect(weak.verdict, explain(weak)).toBe('crossed');
    expect(
      weak.evidence.some((e) => e.source === 'outside' && e.witness === 'cgroup'),
      explain(weak),
    ).toBe(true);
    expect(hardened.verdict, explain(hardened)).toBe('held');
    expect(hardened.reason).toMatch(/throttled/);
  }, 90_000);

  it('the process control (CPU time from a measurement-only cpuacct group) is crossed; a policy of as many cpus as the host has cores is not-applicable here', async () => {
    const control = verdict(await runOn(new ProcessBackend(), ['cpu-quota'], LOW_CPU), 'cpu-quota');
    expect(control.verdict, explain(control)).toBe('crossed');
    expect(control.observation?.resources?.source).toMatch(/cpuacct/);
    const { availableParallelism } = await import('node:os');
    const wide: Policy = { ...CI_POLICY, resources: { ...CI_POLICY.resources, cpus: availableParallelism() } };
    const hardened = verdict(await runOn({}, ['cpu-quota'], wide), 'cpu-quota');
    expect(hardened.verdict, explain(hardened)).toBe('not-applicable');
    expect(hardened.reason).toMatch(/cannot be tested on this machine/);
  }, 90_000);
});

describe.skipIf(SKIP !== undefined)(`disk-fill held only when the disk limit itself was reached${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  it('crossed on the process control and on a host-directory workspace; held on the hardened disk image; inconclusive on a tmpfs the memory limit stops first', async () => {
    const control = verdict(await runOn(new ProcessBackend(), ['disk-fill']), 'disk-fill');
    const weak = verdict(await runOn({ workspace: 'host-dir', misdeclare: true }, ['disk-fill']), 'disk-fill');
    const hardened = verdict(await runOn({}, ['disk-fill']), 'disk-fill');
    const tmpfs = verdict(await runOn({ workspace: 'tmpfs' }, ['disk-fill']), 'disk-fill');
    if (process.env.SC_DEBUG) console.log([control, weak, hardened, tmpfs].map(explain).join('\n'));
    expect(control.verdict, explain(control)).toBe('crossed');
    expect(weak.verdict, explain(weak)).toBe('crossed');
    expect(
      weak.evidence.some((e) => e.source === 'outside' && e.witness === 'box-disk'),
      explain(weak),
    ).toBe(true);
    expect(hardened.verdict, explain(hardened)).toBe('held');
    expect(
      hardened.evidence.some((e) => e.witness === 'cgroup' && /OOM kills 0/.test(e.detail)),
      explain(hardened),
    ).toBe(true);
    // CI policy: 512 MiB of memory, 1024 MiB of disk on a tmpfs charged to the memory cgroup.
    expect(tmpfs.verdict, explain(tmpfs)).toBe('inconclusive');
    expect(tmpfs.reason).toMatch(/memory limit stopped the writer first/);
  }, 120_000);
});

describe.skipIf(SKIP !== undefined)(`disk-image workspace: a crashed run's image goes with the sweep${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  it('an environment whose owner is dead is unmounted, its loop device detached and its image deleted by sweepStaleCgroups', async () => {
    const { existsSync } = await import('node:fs');
    const { readFile, readdir, writeFile } = await import('node:fs/promises');
    const { DEFAULT_STATE_DIR, sweepStaleCgroups } = await import('../../backends/bwrap/index.js');
    const runId = `${PREFIX}${(seq++).toString(36)}`;
    const run = await openRunContext(runId);
    try {
      const backend = await createBwrapBackend({});
      const env = await backend.create(CI_POLICY, { runId, controllerEnv: {}, scratchDir: run.scratchDir });
      const image = (await readdir(run.scratchDir)).find((f) => f.startsWith('bwrap-disk-'));
      expect(image).toBeDefined();
      const ownerFile = join(DEFAULT_STATE_DIR, env.id, 'owner.json');
      const owner = JSON.parse(await readFile(ownerFile, 'utf8')) as { image?: string; ownerPid: number };
      expect(owner.image).toBe(join(run.scratchDir, image ?? ''));
      // The harness "crashed": its record now names a process that is gone.
      await writeFile(ownerFile, JSON.stringify({ ...owner, ownerPid: 2 ** 22 - 1 }));
      const report = await sweepStaleCgroups(runId);
      expect(report.removed).toContain(`workspace ${env.id}`);
      expect(existsSync(join(run.scratchDir, image ?? ''))).toBe(false);
      expect((await readFile('/proc/self/mounts', 'utf8')).includes(env.id)).toBe(false);
      await env.destroy();
    } finally {
      await run.dispose();
    }
  }, 30_000);
});

describe.skipIf(SKIP !== undefined)(`cleanup${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  it("nothing of this file's runs remains: no mount, loop device, disk image, workspace or cgroup", async () => {
    const { readFile, readdir } = await import('node:fs/promises');
    const { execa } = await import('execa');
    const { tmpdir } = await import('node:os');
    const { DEFAULT_STATE_DIR } = await import('../../backends/bwrap/index.js');
    const left: string[] = [];
    left.push(...(await readFile('/proc/self/mounts', 'utf8')).split('\n').filter((l) => l.includes(`/${PREFIX}`) || l.startsWith(`sandcheck-${PREFIX}`)));
    left.push(...(await execa('losetup', ['-a'], { reject: false })).stdout.split('\n').filter((l) => l.includes(PREFIX)));
    left.push(...(await readdir(DEFAULT_STATE_DIR).catch(() => [] as string[])).filter((e) => e.startsWith(PREFIX)));
    left.push(...(await readdir(tmpdir()).catch(() => [] as string[])).filter((e) => e.startsWith(`sandcheck-${PREFIX}`)));
    for (const c of ['memory', 'pids', 'cpu', 'freezer'])
      left.push(...(await readdir(join('/sys/fs/cgroup', c)).catch(() => [] as string[])).filter((e) => e.startsWith(`sandcheck-${PREFIX}`)));
    expect(left).toEqual([]);
  });
});
