/**
 * The capability escapes (issue 17) on real local boxes, in one lab of this file's own:
 * - the unsandboxed `process` control crosses every one this machine can test; it runs them as part of the
 *   whole security suite, after which the host is exactly as before (decoys, mounts, modules, keyrings, no
 *   device node, IPC object or socket left);
 * - hardened bwrap holds every one, with the payload's refusals on record;
 * - each weakened command-bwrap variant (test/helpers/escape-variants.ts: bwrap as root with exactly one
 *   `--cap-add`) crosses exactly its own probe and no other escape.
 * Two run contexts share the lab: one with its decoys where sandcheck normally puts them (this machine's
 * /tmp), one with its decoys on a loop disk of the test's own, for the probes that need to open the disk
 * holding the decoy (a machine may close its real disk even to root: then those are not-applicable on
 * the first context, and the loop disk shows them crossing).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import createBwrapBackend from '../../backends/bwrap/index.js';
import createCommandBackend from '../../backends/command/index.js';
import createProcessBackend from '../../backends/process/index.js';
import { findBinary } from '../../core/find-binary.js';
import { CI_POLICY } from '../../model/policy.js';
import type { SecurityResult } from '../../model/scorecard.js';
import type { RunContext } from '../../harness/run-context.js';
import type { LabSession } from '../../lab/lab-session.js';
import { escapeProbes } from '../../suites/escapes.js';
import { securitySuite } from '../../suites/security.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';
import { ESCAPE_VARIANTS, writeEscapeVariant } from '../helpers/escape-variants.js';
import { explainResult, openLoopDisk, openRunIn, openTestLab, runProbes, type LoopDisk } from '../helpers/escapes-run.js';
import { hostChanges, hostSnapshot } from '../helpers/host-snapshot.js';

async function skipReason(): Promise<string | undefined> {
  const bwrap = await bwrapSkipReason();
  if (bwrap) return bwrap;
  for (const tool of ['losetup', 'mkfs.ext4', 'truncate']) if (!(await findBinary(tool))) return `${tool} is not installed`;
  return undefined;
}

const SKIP = await skipReason();
const runId = `resl${randomBytes(3).toString('hex')}`;
let lab: LabSession | undefined;
let disk: LoopDisk | undefined;
/** Decoys where sandcheck puts them. */
let usual: RunContext | undefined;
/** Decoys on the test's own loop disk. */
let onLoop: RunContext | undefined;
let variantDir = '';

/** Why a probe may be not-applicable on this machine (a cause outside the box), else undefined. */
const MACHINE_LIMITS: Record<string, RegExp> = {
  'escape-kernel-module': /no loadable module support/,
  'escape-mknod-disk': /cannot open its disk/,
};

const verdicts = (rs: Map<string, SecurityResult>): string => [...rs.values()].map((r) => `${r.id} ${r.verdict}`).join(', ');

/** A crossing rests on outside evidence, except the kernel module's, whose rule allows the payload's challenge-bound word. */
function expectCrossed(r: SecurityResult | undefined): void {
  expect(r?.verdict, explainResult(r)).toBe('crossed');
  if (r?.id !== 'escape-kernel-module')
    expect(
      r?.evidence.some((e) => e.source === 'outside' && (e.witness === 'canary-scan' || e.witness === 'packet-witness')),
      explainResult(r),
    ).toBe(true);
}

describe.skipIf(SKIP !== undefined)(`capability escapes on local boxes${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  beforeAll(async () => {
    disk = await openLoopDisk();
    lab = await openTestLab(runId);
    usual = await openRunIn(lab, runId);
    onLoop = await openRunIn(lab, runId, disk.dir);
    variantDir = await mkdtemp(join(tmpdir(), 'sc-escvar-'));
  }, 120_000);

  afterAll(async () => {
    await usual?.dispose().catch(() => undefined);
    await onLoop?.dispose().catch(() => undefined);
    await lab?.close().catch(() => undefined);
    await disk?.close().catch(() => undefined);
    if (variantDir) await rm(variantDir, { recursive: true, force: true });
  }, 60_000);

  it('process control: every escape crosses (or is not-applicable for a named cause of this machine); after the whole security suite the host is as it was', async () => {
    if (!usual || !onLoop || !disk) throw new Error('no run');
    const process = await createProcessBackend();
    const beforeUsual = await hostSnapshot(usual.decoyDir);
    const beforeLoop = await hostSnapshot(onLoop.decoyDir);
    // The comparison has something to compare: the decoy sockets beside the decoy home and the decoy keys.
    for (const snap of [beforeUsual, beforeLoop]) {
      expect(Object.values(snap.decoyPlaces).filter((v) => v.startsWith('socket ')).length, JSON.stringify(snap.decoyPlaces)).toBeGreaterThan(1);
      expect(snap.ownKeys.length, JSON.stringify(snap.keys)).toBeGreaterThan(0);
    }
    const a = await runProbes(usual, process, CI_POLICY, securitySuite, 2);
    expect(a.size).toBe(securitySuite.length);
    const b = await runProbes(onLoop, process, CI_POLICY, escapeProbes);
    console.log(`process control, whole suite, usual decoys: ${verdicts(a)}\nprocess control, decoys on a loop disk: ${verdicts(b)}`);
    for (const p of escapeProbes) {
      const r = a.get(p.id);
      const limit = MACHINE_LIMITS[p.id];
      if (r?.verdict === 'not-applicable' && limit) expect(r.reason).toMatch(limit);
      else expectCrossed(r);
    }
    // On the test's own disk the raw-device probes have a disk the host can open.
    for (const id of ['escape-mount-host', 'escape-mknod-disk', 'escape-proc-root']) expectCrossed(b.get(id));
    const own = [usual.scratchDir, onLoop.scratchDir, disk.dir];
    expect(hostChanges(beforeUsual, await hostSnapshot(usual.decoyDir), own)).toEqual([]);
    expect(hostChanges(beforeLoop, await hostSnapshot(onLoop.decoyDir), own)).toEqual([]);
  }, 480_000);

  it('hardened bwrap holds every escape, with the refusal on record', async () => {
    if (!usual || !onLoop) throw new Error('no run');
    const bwrap = await createBwrapBackend();
    for (const run of [usual, onLoop]) {
      const rs = await runProbes(run, bwrap, CI_POLICY, escapeProbes);
      console.log(`hardened bwrap: ${verdicts(rs)}`);
      for (const p of escapeProbes) {
        const r = rs.get(p.id);
        if (r?.verdict === 'not-applicable' && MACHINE_LIMITS[p.id]?.test(r.reason)) continue;
        expect(r?.verdict, explainResult(r)).toBe('held');
        expect(
          r?.evidence.some((e) => e.witness === 'payload-steps'),
          explainResult(r),
        ).toBe(true);
        expect(
          r?.evidence.some((e) => e.source === 'outside' && e.witness !== 'exit-status'),
          explainResult(r),
        ).toBe(true);
      }
    }
  }, 240_000);

  const cases: [keyof typeof ESCAPE_VARIANTS, string, 'usual' | 'loop'][] = [
    ['sysAdminDev', 'escape-mount-host', 'usual'],
    ['dacReadSearch', 'escape-file-handle', 'usual'],
    ['hostPidPtrace', 'escape-proc-root', 'usual'],
    ['mknod', 'escape-mknod-disk', 'loop'],
    ['netRawLab', 'escape-raw-socket', 'usual'],
  ];
  it('a box that rewrites its output (the decoy line dropped, ok turned into EPERM) earns no held where the host saw it holding the power', async () => {
    if (!usual) throw new Error('no run');
    const backend = await createCommandBackend({ configFile: await writeEscapeVariant(variantDir, ESCAPE_VARIANTS.dacReadSearchLiar) });
    const r = (
      await runProbes(
        usual,
        backend,
        CI_POLICY,
        escapeProbes.filter((p) => p.id === 'escape-file-handle'),
      )
    ).get('escape-file-handle');
    expect(r?.verdict, explainResult(r)).toBe('inconclusive');
    expect(r?.reason).toMatch(
      /holding CAP_DAC_READ_SEARCH over the host \(CapEff [0-9a-f]+\) with no seccomp filter, yet the payload reported open_by_handle_at .*: EPERM/,
    );
  }, 180_000);

  for (const [variant, id, where] of cases) {
    it(`${ESCAPE_VARIANTS[variant].name} crosses ${id} and no other escape`, async () => {
      const run = where === 'usual' ? usual : onLoop;
      if (!run) throw new Error('no run');
      const backend = await createCommandBackend({ configFile: await writeEscapeVariant(variantDir, ESCAPE_VARIANTS[variant]) });
      const rs = await runProbes(run, backend, CI_POLICY, escapeProbes);
      console.log(`${ESCAPE_VARIANTS[variant].name}: ${verdicts(rs)}`);
      expectCrossed(rs.get(id));
      expect([...rs.values()].filter((r) => r.verdict === 'crossed').map((r) => r.id)).toEqual([id]);
    }, 180_000);
  }
});
