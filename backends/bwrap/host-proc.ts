import { readdirSync } from 'node:fs';
import { procText } from '../../core/proc-files.js';

/** What bwrap alone reads from the host's /proc (the rest: ../shared/host-proc.ts), synchronously (lab/proc-files.ts says why). */

export interface ProcIdentity {
  pid: number;
  name: string;
  /** real, effective, saved, filesystem */
  uids: number[];
  gids: number[];
  capEff: bigint;
  noNewPrivs: boolean | undefined;
}

export function parseStatus(pid: number, text: string): ProcIdentity | undefined {
  const field = (name: string): string | undefined => new RegExp(`^${name}:[ \\t]*(.*)$`, 'm').exec(text)?.[1]?.trim();
  const uid = field('Uid');
  const gid = field('Gid');
  const cap = field('CapEff');
  if (uid === undefined || gid === undefined || cap === undefined) return undefined;
  const nnp = field('NoNewPrivs');
  return {
    pid,
    name: field('Name') ?? '?',
    uids: uid.split(/\s+/).map(Number),
    gids: gid.split(/\s+/).map(Number),
    capEff: BigInt(`0x${cap}`),
    noNewPrivs: nnp === undefined ? undefined : nnp === '1',
  };
}

export async function readIdentity(pid: number): Promise<ProcIdentity | undefined> {
  const text = procText(`/proc/${pid}/status`);
  return text === undefined ? undefined : parseStatus(pid, text);
}

const O_CLOEXEC = 0o2000000;

/**
 * This process's own descriptors above stderr that a child would inherit (no O_CLOEXEC): whatever the
 * harness's parent left open. bwrap passes every inherited descriptor into the box, so the launcher gets
 * /dev/null in their place.
 */
export async function inheritableFds(): Promise<number[]> {
  let entries: string[];
  try {
    entries = readdirSync('/proc/self/fd');
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const e of entries) {
    const fd = Number(e);
    if (!Number.isInteger(fd) || fd < 3) continue;
    // Unreadable: closed meanwhile (the directory listing's own descriptor, for one).
    const flags = /^flags:\s*([0-7]+)$/m.exec(procText(`/proc/self/fdinfo/${fd}`) ?? '')?.[1];
    if (flags !== undefined && (parseInt(flags, 8) & O_CLOEXEC) === 0) out.push(fd);
  }
  return out.sort((a, b) => a - b);
}
