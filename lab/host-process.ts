import { readFile, readlink } from 'node:fs/promises';

/** Identity of one host process as the kernel reports it in /proc/<pid>/status. */
export interface ProcessIdentity {
  pid: number;
  command: string;
  realUid: number;
  effectiveUid: number;
  capEff: string;
  noNewPrivs: number | null;
  seccomp: number | null;
  /** VmHWM: the process's peak resident memory. */
  peakRssBytes: number | null;
  /** The process is in the host's user namespace: only then are its capabilities host capabilities. */
  hostUserNamespace: boolean;
}

function field(status: string, name: string): string | undefined {
  return new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status)?.[1]?.trim();
}

function kib(value: string | undefined): number | null {
  const n = /^(\d+)\s*kB$/.exec(value ?? '')?.[1];
  return n === undefined ? null : Number(n) * 1024;
}

export async function readProcessIdentity(pid: number): Promise<ProcessIdentity | undefined> {
  let status: string;
  let userNs: string;
  try {
    status = await readFile(`/proc/${pid}/status`, 'utf8');
    userNs = await readlink(`/proc/${pid}/ns/user`);
  } catch {
    return undefined;
  }
  const uids = (field(status, 'Uid') ?? '').split(/\s+/).map(Number);
  const num = (name: string): number | null => {
    const v = field(status, name);
    return v === undefined ? null : Number(v);
  };
  return {
    pid,
    command: field(status, 'Name') ?? '?',
    realUid: uids[0] ?? -1,
    effectiveUid: uids[1] ?? -1,
    capEff: field(status, 'CapEff') ?? 'unknown',
    noNewPrivs: num('NoNewPrivs'),
    seccomp: num('Seccomp'),
    peakRssBytes: kib(field(status, 'VmHWM')),
    hostUserNamespace: userNs === (await readlink('/proc/self/ns/user').catch(() => '')),
  };
}

/** True when the process holds any capability over the host (capabilities inside a child user namespace do not count). */
export function hasCapabilities(id: ProcessIdentity): boolean {
  return id.hostUserNamespace && /^[0-9a-f]+$/i.test(id.capEff) && BigInt(`0x${id.capEff}`) !== 0n;
}
