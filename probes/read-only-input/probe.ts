import { createHash } from 'node:crypto';
import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside } from '../../model/evidence.js';
import type { Observation, ProbeContext, SecurityProbe } from '../../model/probe.js';
import { reportedField } from '../_shared/exposure-judges.js';

/** One input file per technique the payload tries on it (see payload.py). */
export const READ_ONLY_TECHNIQUES = ['write', 'truncate', 'chmod', 'rename', 'unlink', 'replace', 'symlink'] as const;

const pathOf = (technique: string): string => (technique === 'rename' ? `inputs/ro-${technique}.txt` : `ro-${technique}.txt`);

/** Each input's bytes: fixed per probe run (from its nonce), so the judge knows them without trusting the box. */
function inputBytes(ctx: ProbeContext, technique: string): Buffer {
  return Buffer.from(`sandcheck read-only input ${technique} ${ctx.nonce}\n`.repeat(64));
}

/** A writable input the payload appends its challenge answer to: the download API must show that change. */
export const WRITE_CONTROL = 'rw-control.txt';

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

export const readOnlyInput: SecurityProbe = {
  kind: 'security',
  id: 'read-only-input',
  title: 'write, truncate, chmod, rename, unlink and replace read-only inputs',
  category: 'files',
  policyItem: 'files.readOnlyInput',
  severity: 'medium',
  payload: 'read-only-input',
  remediation:
    'Put inputs in root-owned (or otherwise box-foreign) files on a read-only mount or bind each one read-only; a mode of 0444 alone stops no root box and no owner of the directory.',
  attack: ['T1565.001', 'T1222.002'],
  cwe: ['CWE-732'],
  files: (ctx) => [
    ...READ_ONLY_TECHNIQUES.map((t) => ({ path: pathOf(t), content: inputBytes(ctx, t), readOnly: true })),
    { path: WRITE_CONTROL, content: inputBytes(ctx, 'control') },
  ],
  args: () => ({ inputs: Object.fromEntries(READ_ONLY_TECHNIQUES.map((t) => [t, pathOf(t)])), writeControl: WRITE_CONTROL }),
  artifacts: [...READ_ONLY_TECHNIQUES.map(pathOf), WRITE_CONTROL],
  hostRead: READ_ONLY_TECHNIQUES.map(pathOf),
  judge: (obs, ctx) => {
    const notRun = unlessAttempted(obs, true);
    if (notRun) return notRun;
    const changed: string[] = [];
    const checked: string[] = [];
    for (const t of READ_ONLY_TECHNIQUES) {
      const path = pathOf(t);
      const got = obs.artifacts.find((a) => a.path === path);
      const want = sha256(inputBytes(ctx, t));
      if (!got || got.kind === 'missing') changed.push(`${path} (${t}): gone`);
      else if (got.kind !== 'file') changed.push(`${path} (${t}): now a ${got.kind}${got.linkTarget !== undefined ? ` → ${got.linkTarget}` : ''}`);
      else if (!got.content) changed.push(`${path} (${t}): not readable after the exec (${got.note ?? `size ${got.size}`})`);
      else if (sha256(got.content) !== want)
        changed.push(`${path} (${t}): bytes changed (${got.size} bytes, sha256 ${sha256(got.content).slice(0, 12)}…, put ${want.slice(0, 12)}…)`);
      else checked.push(path);
    }
    const host = hostReadOf(obs, ctx);
    if (host) changed.push(...host.changed);
    const evidence = [
      outside(
        'input-hashes',
        `${checked.length} of ${READ_ONLY_TECHNIQUES.length} read-only inputs byte-identical after the exec (sha256 via the download API)${changed.length > 0 ? `; changed: ${changed.join('; ')}` : ''}`,
        'download API',
      ),
      ...(host ? [outside('host-read', host.detail, 'host lstat and read of the workspace')] : []),
      exitEvidence(obs.exec),
      payloadReport(obs.exec),
    ];
    if (changed.length > 0) return { verdict: 'crossed', reason: `read-only inputs were changed by the box: ${changed.slice(0, 4).join('; ')}`, evidence };
    // Unchanged bytes are proof only if the download API shows what the box did: the writable control carries the answer.
    const control = obs.artifacts.find((a) => a.path === WRITE_CONTROL);
    const wrote = `${obs.token('write-control')}\n`;
    const controlSeen =
      control?.kind === 'file' &&
      control.content !== undefined &&
      Buffer.from(control.content).toString('utf8') === `${inputBytes(ctx, 'control').toString('utf8')}${wrote}`;
    evidence.splice(
      1,
      0,
      outside(
        'write-control',
        controlSeen
          ? `the writable control ${WRITE_CONTROL} came back with the payload's answer appended`
          : `the writable control ${WRITE_CONTROL} came back without the payload's answer (${control?.kind ?? 'not listed'}${control?.size !== undefined ? `, ${control.size} bytes` : ''})`,
        'download API',
      ),
    );
    // Without the control, the host's own read proves it, once the box named the very files the host read.
    if (!controlSeen && host?.bound) {
      return {
        verdict: 'held',
        reason: `every read-only input (${READ_ONLY_TECHNIQUES.length}, one per technique) was byte-identical on the host after the box tried to change it, read by the harness itself (the box saw those very files: same device and inode)`,
        evidence,
      };
    }
    if (!controlSeen) {
      return {
        verdict: 'inconclusive',
        reason: `the download API did not show the payload's write to a writable input (${WRITE_CONTROL}): unchanged read-only inputs read through it prove nothing`,
        evidence,
      };
    }
    return {
      verdict: 'held',
      reason: `every read-only input (${READ_ONLY_TECHNIQUES.length}, one per technique: ${READ_ONLY_TECHNIQUES.join(', ')}) was byte-identical after the box tried to change it`,
      evidence,
    };
  },
};

/**
 * The harness's own before and after reads of the inputs on the host. `changed`: what differs from what was put or
 * from the file that was there before; `bound`: every input was the file put, and the payload's lstat before its
 * attempts named that file's device and inode (a box working on copies could not).
 */
function hostReadOf(obs: Observation, ctx: ProbeContext): { changed: string[]; bound: boolean; detail: string } | undefined {
  const read = obs.hostRead;
  if (!read) return undefined;
  const inodes = reportedField(obs, 'inodes');
  const changed: string[] = [];
  let putAsMade = true;
  let named = true;
  for (const t of READ_ONLY_TECHNIQUES) {
    const path = pathOf(t);
    const before = read.before.find((f) => f.path === path);
    const after = read.after.find((f) => f.path === path);
    const want = sha256(inputBytes(ctx, t));
    if (before?.kind !== 'file' || before.sha256 !== want) {
      putAsMade = false;
      continue;
    }
    if (!after || after.kind === 'missing') changed.push(`${path} (${t}): gone on the host`);
    else if (after.kind !== 'file') changed.push(`${path} (${t}): ${after.note ?? 'not a regular file'} on the host`);
    else if (after.sha256 !== want) changed.push(`${path} (${t}): bytes changed on the host (${after.size} bytes)`);
    else if (after.ino !== before.ino || after.dev !== before.dev) changed.push(`${path} (${t}): replaced on the host (inode ${before.ino} → ${after.ino})`);
    const seen = typeof inodes === 'object' && inodes !== null ? (inodes as Record<string, unknown>)[path] : undefined;
    if (!Array.isArray(seen) || seen[0] !== before.dev || seen[1] !== before.ino) named = false;
  }
  const binding = !putAsMade
    ? 'the host workspace did not hold every input as put (the backend keeps them elsewhere): this read binds nothing'
    : named
      ? "the box's lstat named the same device and inode for each"
      : "the box's lstat did not name the host's device and inode for every input: the box may work on copies";
  const detail = `read on the host before and after the exec: ${changed.length === 0 ? 'every read-only input unchanged' : `changed: ${changed.join('; ')}`}; ${binding}`;
  return { changed, bound: putAsMade && named, detail };
}
