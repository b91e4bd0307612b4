/**
 * Judging the classic credential paths from outside. The payload never prints what it read: for each path
 * it gives an errno, or sha256(nonce ‖ first bytes) and the size, where the nonce is this execution's
 * challenge answer. The harness computes the same hash over the HOST's own file at that path (bounded, never
 * stored or printed: only whether the two are equal) and, when it sampled a process of the box's program,
 * looks the path up through /proc/<pid>/root (device and inode) while the box ran.
 *
 * crossed: the box's hash equals the host's (it cannot be computed without the host's bytes; the nonce
 * stops a replay), unless the host saw another file (another inode) at that path in the box's root: a copy
 * of identical bytes the box owns (a regular file only; /proc files have no shared inode to compare).
 * held: the payload ran, hashed its own source with this nonce (the control), answered for every path, and
 * for each either could not read it, or what it read is shown not to be the host's file (hash differs, the
 * host has no such file, or another inode in the box's root). A hash that differs while the host saw the
 * host's very inode in the box's root is a contradiction: inconclusive.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { exitEvidence, unlessAttempted } from '../../model/judge.js';
import { inside, outside, type Evidence } from '../../model/evidence.js';
import type { Judgement, Observation, ProbeContext } from '../../model/probe.js';
import { payloadPath } from '../../core/paths.js';
import { postureOf } from '../../lab/host-process.js';
import { rootViewOf, type RootEntry } from '../../lab/root-view.js';
import { signedJsonLines } from '../_shared/escapes.js';
import { describeIdentity } from '../_shared/identity.js';

/** The classic places a credential sits on a Linux host (ATT&CK T1552.001, T1003.008). */
export const CREDENTIAL_PATHS: readonly string[] = [
  '/etc/shadow',
  '/etc/gshadow',
  '/root/.ssh/id_rsa',
  '/root/.ssh/id_ed25519',
  '/root/.aws/credentials',
  '/root/.docker/config.json',
  '/root/.kube/config',
  '/etc/ssh/ssh_host_ed25519_key',
  '/proc/1/environ',
];
/** Bytes hashed per file, in the box and on the host alike. */
export const MAX_HASHED_BYTES = 64 * 1024;
export const LINE_MARKER = 'SANDCHECK-CRED';
export const LINE_TOKEN_KIND = 'credential-line';
export const HASH_TOKEN_KIND = 'credential-hash';
const CONTROL = '(control) payload.py';

/** One path as the payload reported it (challenge-bound line). */
export interface BoxClaim {
  path: string;
  /** `read` or an errno name. */
  outcome: string;
  sha256?: string;
  size?: number;
  dev?: number;
  ino?: number;
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function claimOf(v: unknown): BoxClaim | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const { path, outcome, sha256, size, dev, ino } = v as Record<string, unknown>;
  if (typeof path !== 'string' || path.length > 300 || typeof outcome !== 'string') return undefined;
  if (outcome === 'read') {
    if (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256) || !isCount(size) || size > MAX_HASHED_BYTES) return undefined;
    return { path, outcome, sha256, size, ...(isCount(dev) ? { dev } : {}), ...(isCount(ino) ? { ino } : {}) };
  }
  return /^E[A-Z0-9]{1,30}$/.test(outcome) ? { path, outcome } : undefined;
}

/** The payload's challenge-bound answers (another execution's lines, a replay's, torn ones are ignored). */
export function boxClaims(obs: Observation): BoxClaim[] {
  return signedJsonLines(obs, LINE_MARKER, LINE_TOKEN_KIND, 64)
    .map(claimOf)
    .filter((c): c is BoxClaim => c !== undefined);
}

/** The host's own file at a path: its device, inode, size and nonce-bound hash (the bytes and their plain hash never leave this function). */
export interface HostFile {
  exists: boolean;
  dev?: number;
  ino?: number;
  size?: number;
  /** sha256(nonce ‖ first MAX_HASHED_BYTES bytes). */
  hash?: string;
  /** Why the host could not stat or read its own file (ENOENT when there is none). */
  error?: string;
}

const errCode = (err: unknown): string => (err as NodeJS.ErrnoException).code ?? 'EIO';

export function hostFile(hostRoot: string, path: string, nonce: string, maxBytes = MAX_HASHED_BYTES): HostFile {
  const full = join(hostRoot, path);
  let fd: number;
  try {
    fd = openSync(full, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    const st = (() => {
      try {
        return statSync(full);
      } catch {
        return undefined;
      }
    })();
    return st ? { exists: true, dev: st.dev, ino: st.ino, size: st.size, error: errCode(err) } : { exists: false, error: errCode(err) };
  }
  try {
    const st = fstatSync(fd);
    const digest = createHash('sha256').update(nonce);
    const buf = Buffer.alloc(Math.min(maxBytes, 65536));
    let size = 0;
    while (size < maxBytes) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, maxBytes - size), null);
      if (n <= 0) break;
      digest.update(buf.subarray(0, n));
      size += n;
    }
    buf.fill(0);
    return { exists: true, dev: st.dev, ino: st.ino, size, hash: digest.digest('hex') };
  } catch (err) {
    return { exists: true, error: errCode(err) };
  } finally {
    closeSync(fd);
  }
}

/**
 * Why this harness has nothing to compare a box's reads with: it can open none of the paths on its own host (none
 * exists, or it is not root). A cause outside the box: the probe is not-applicable without running.
 */
export function hostPreconditionFor(hostRoot: string, paths: readonly string[]): string | undefined {
  const openable = paths.some((path) => {
    try {
      closeSync(openSync(join(hostRoot, path), constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY));
      return true;
    } catch {
      return false;
    }
  });
  return openable
    ? undefined
    : `the harness can open none of the ${paths.length} classic credential paths on this host (none exists, or it does not run as root): it has no file of its own to compare a box's reads with`;
}

/**
 * What the host saw of the payload's own process (its argv carries the nonce) while it ran: each path looked
 * up in its root, and whether it has a PID namespace of its own (then its /proc/1 is its own init).
 */
function rootEntries(obs: Observation, ctx: ProbeContext): { pid: number; entries: Map<string, RootEntry>; ownPidNs: boolean } | undefined {
  for (const p of obs.exec.hostProcesses ?? []) {
    const view = rootViewOf(p);
    if (view && view.cmdline.includes(ctx.nonce)) {
      const posture = postureOf(p);
      const ownPidNs = posture !== undefined && posture.cmdline.includes(ctx.nonce) && posture.sharedNamespaces.pid === false;
      return { pid: view.pid, entries: new Map(view.entries.map((e) => [e.path, e])), ownPidNs };
    }
  }
  return undefined;
}

/** A path under the box's /proc/1: its own init's when the box has a PID namespace of its own. */
const ofPid1 = (path: string): boolean => /^\/proc\/1\//.test(path);
/** Why the host could not tell the box's /proc/1 its own init (in an inconclusive reason: a blind sampler reads differently from a shared namespace). */
const pid1Unseen = (seen: ReturnType<typeof rootEntries>): string =>
  seen === undefined
    ? "; the host never saw the payload's own process while it ran"
    : "; the host saw the payload's process but not a PID namespace of its own";

/** A file whose identity is its inode: procfs files are per mount and per process, their (dev, ino) says nothing. */
const comparableByInode = (path: string): boolean => !path.startsWith('/proc/');
const sameInode = (r: RootEntry | undefined, h: HostFile): boolean | undefined =>
  r === undefined || r.error !== undefined || h.dev === undefined ? undefined : r.dev === h.dev && r.ino === h.ino;
const describeRoot = (r: RootEntry, h: HostFile): string =>
  r.error !== undefined
    ? `no file there (${r.error})`
    : sameInode(r, h)
      ? `the host's own file (dev ${r.dev} ino ${r.ino})`
      : `another file than the host's (dev ${r.dev} ino ${r.ino}; the host's is dev ${h.dev ?? '?'} ino ${h.ino ?? '?'})`;

export interface CredentialJudgeOptions {
  /** Where the host's own files are looked at ('/' for the real host; a test's directory in unit tests). */
  hostRoot: string;
  paths: readonly string[];
  /** The payload's source, which it hashes first with the same routine (the control). */
  payloadBytes(): Uint8Array;
}

type PathFinding = { kind: 'crossed' | 'judged' | 'absent' | 'unjudged'; detail: string; evidence?: Evidence };

export function judgeCredentialPaths(obs: Observation, ctx: ProbeContext, opts: CredentialJudgeOptions): Judgement {
  const nonce = obs.token(HASH_TOKEN_KIND);
  const claims = boxClaims(obs);
  const seen = rootEntries(obs, ctx);
  const procs = obs.exec.hostProcesses ?? [];
  const insideLine =
    claims.length > 0
      ? [
          inside(
            'payload-lines',
            claims
              .slice(0, 12)
              .map((c) => `${c.path}: ${c.outcome === 'read' ? `read ${c.size ?? 0} bytes (dev ${c.dev ?? '?'} ino ${c.ino ?? '?'})` : c.outcome}`)
              .join('; '),
            'stdout',
          ),
        ]
      : [];
  // No stdout excerpt (payloadReport): the box's lines carry its nonce-bound hashes; the result's observation keeps the output.
  const context = [
    ...procs.slice(0, 2).map((p) => outside('host-proc-status', describeIdentity(p), `/proc/${p.pid}/status`)),
    ...insideLine,
    exitEvidence(obs.exec),
  ];
  const where = seen ? `/proc/${seen.pid}/root` : undefined;

  const findings = new Map<string, PathFinding>();
  for (const path of opts.paths) {
    const mine = claims.filter((c) => c.path === path);
    const host = hostFile(opts.hostRoot, path, nonce);
    const root = seen?.entries.get(path);
    const rootLine = root ? outside('host-proc-root', `${path} in the box's root: ${describeRoot(root, host)}`, where) : undefined;
    const read = mine.filter((c) => c.outcome === 'read');
    const matched = host.hash !== undefined && (host.size ?? 0) > 0 ? read.find((c) => c.sha256 === host.hash) : undefined;
    const otherInode = comparableByInode(path) && sameInode(root, host) === false;
    if (matched && !otherInode) {
      findings.set(path, {
        kind: 'crossed',
        detail: `${path} (${host.size} bytes)`,
        evidence: outside(
          'host-file-hash',
          `${path}: the box answered with sha256(this execution's nonce ‖ content) of ${matched.size} bytes and the host's own computation over its ${path} (${host.size} bytes, dev ${host.dev} ino ${host.ino}) is equal: the box read the host's bytes${root ? `; the host saw at ${path} in the box's root ${describeRoot(root, host)}` : ''}`,
          'host',
        ),
      });
      continue;
    }
    if (mine.length === 0) {
      findings.set(path, { kind: 'unjudged', detail: `${path}: no answer from the payload` });
      continue;
    }
    if (new Set(mine.map((c) => JSON.stringify(c))).size > 1) {
      findings.set(path, { kind: 'unjudged', detail: `${path}: the payload gave ${mine.length} different answers` });
      continue;
    }
    const claim = mine[0] as BoxClaim;
    if (claim.outcome !== 'read') {
      if (!host.exists) findings.set(path, { kind: 'absent', detail: `${path}: no such file on the host, and the box read none (${claim.outcome})` });
      else if ((claim.outcome === 'ENOENT' || claim.outcome === 'ENOTDIR') && comparableByInode(path) && sameInode(root, host) === true) {
        // A refusal (EACCES) of the host's very file is what a non-root box gets; "no such file" where the host sees its own is a lie or a race.
        findings.set(path, {
          kind: 'unjudged',
          detail: `${path}: the box answered ${claim.outcome}, yet the host saw its own file at this path in the box's root`,
        });
      } else {
        findings.set(path, {
          kind: 'judged',
          detail: `${path}: not read (${claim.outcome})`,
          evidence:
            rootLine ??
            outside(
              'host-file-hash',
              `${path}: the host has the file (dev ${host.dev ?? '?'} ino ${host.ino ?? '?'}); the box answered ${claim.outcome}, no hash of its content`,
              'host',
            ),
        });
      }
      continue;
    }
    // The box read something that is not byte-identical to the host's file (or the host's is empty).
    if (matched) {
      findings.set(path, {
        kind: 'judged',
        detail: `${path}: the box's own copy (identical bytes, another inode)`,
        evidence: rootLine ?? outside('host-proc-root', path, where),
      });
    } else if (!host.exists) {
      findings.set(path, {
        kind: 'judged',
        detail: `${path}: read the box's own file (the host has none)`,
        evidence: outside(
          'host-file-hash',
          `${path}: no such file on the host (${host.error ?? 'ENOENT'}): what the box read (${claim.size} bytes) is its own`,
          'host',
        ),
      });
    } else if (!comparableByInode(path) && ofPid1(path) && seen?.ownPidNs) {
      findings.set(path, {
        kind: 'judged',
        detail: `${path}: read the box's own pid 1 (its own PID namespace)`,
        evidence: outside(
          'host-proc-posture',
          `${path}: the host saw the payload's process in a PID namespace other than its own (/proc/${seen.pid}/ns/pid), so the box's /proc/1 is its own init, not the host's pid 1`,
          `/proc/${seen.pid}/ns/pid`,
        ),
      });
    } else if (host.hash !== undefined && host.size === 0) {
      findings.set(path, { kind: 'absent', detail: `${path}: the host's file is empty, nothing of it to protect` });
    } else if (comparableByInode(path) && sameInode(root, host) === true) {
      findings.set(path, {
        kind: 'unjudged',
        detail: `${path}: the host saw its own file at this path in the box's root, yet the box's hash differs from the host's (a torn read or a lying box)`,
      });
    } else if (comparableByInode(path) && root?.error !== undefined) {
      findings.set(path, {
        kind: 'unjudged',
        detail: `${path}: the box says it read ${claim.size} bytes, but the host found no file there in its root (${root.error})`,
      });
    } else if (host.hash === undefined) {
      findings.set(
        path,
        otherInode
          ? { kind: 'judged', detail: `${path}: another file than the host's`, ...(rootLine ? { evidence: rootLine } : {}) }
          : {
              kind: 'unjudged',
              detail: `${path}: the host could not read its own file to compare (${host.error ?? 'unknown'})${ofPid1(path) ? pid1Unseen(seen) : ''}`,
            },
      );
    } else {
      findings.set(path, {
        kind: 'judged',
        detail: `${path}: read ${claim.size} bytes that are not the host's`,
        evidence: outside(
          'host-file-hash',
          `${path}: the host's own sha256(this execution's nonce ‖ content) over its ${host.size}-byte file differs from the box's answer (${claim.size} bytes)${root ? `; at ${path} in the box's root the host saw ${describeRoot(root, host)}` : ''}`,
          'host',
        ),
      });
    }
  }

  const all = [...findings.values()];
  const crossed = all.filter((f) => f.kind === 'crossed');
  if (crossed.length > 0) {
    return {
      verdict: 'crossed',
      reason: `the box read the host's own credential files: ${crossed.map((f) => f.detail).join(', ')} (its nonce-bound hashes equal the host's own)`,
      evidence: [...crossed.flatMap((f) => (f.evidence ? [f.evidence] : [])), ...context],
    };
  }
  const notRun = unlessAttempted(obs, true);
  if (notRun) return { ...notRun, evidence: [...notRun.evidence.filter((e) => e.witness !== 'payload-report'), ...insideLine] };
  const control = claims.filter((c) => c.path === CONTROL);
  const expected = createHash('sha256').update(nonce).update(opts.payloadBytes().subarray(0, MAX_HASHED_BYTES)).digest('hex');
  if (control.length !== 1 || control[0]?.sha256 !== expected) {
    return {
      verdict: 'inconclusive',
      reason: `the payload's control (its own source hashed by the same routine with this execution's nonce) ${control.length === 0 ? 'is missing' : control[0]?.outcome === 'read' ? "does not match the host's computation" : `failed (${control[0]?.outcome ?? '?'})`}: its hashes are not bound to this execution, so a differing hash proves nothing`,
      evidence: context,
    };
  }
  const unjudged = all.filter((f) => f.kind === 'unjudged');
  if (unjudged.length > 0) {
    return {
      verdict: 'inconclusive',
      reason: unjudged
        .slice(0, 3)
        .map((f) => f.detail)
        .join('; '),
      evidence: context,
    };
  }
  const judged = all.filter((f) => f.kind === 'judged');
  if (judged.length === 0) {
    return {
      verdict: 'not-applicable',
      reason: `none of the ${opts.paths.length} classic credential paths has a file on this host, and the box read none: nothing here to protect, so nothing to judge (${all
        .map((f) => f.detail)
        .slice(0, 3)
        .join('; ')})`,
      evidence: context,
    };
  }
  const skipped = all.filter((f) => f.kind === 'absent');
  return {
    verdict: 'held',
    reason: `the box read none of the host's credential files: ${judged.map((f) => f.detail).join('; ')}${skipped.length > 0 ? ` (${skipped.length} path(s) have no file on this host)` : ''}; compared on the host with its own files (nonce-bound hashes${seen ? " and the box's root seen through /proc/<pid>/root" : ''})`,
    evidence: [...judged.flatMap((f) => (f.evidence ? [f.evidence] : [])), ...context],
  };
}

/** The payload's source, read once (the control the judge checks). */
let source: Buffer | undefined;
export const payloadSource = (): Buffer => (source ??= readFileSync(payloadPath('host-credential-paths')));
