import { randomBytes } from 'node:crypto';
import type { Environment } from '../backends/contract.js';
import { exeBasename, procLink, procText } from '../lab/proc-files.js';
import { PAYLOAD_INTERPRETER } from './host-observers.js';

/** Where the processes of a box sat, as the host read their network namespaces. */
export interface Placement {
  /** The harness's own network namespace (the host's: the run's lab is a namespace it made beside it). */
  hostNs: string;
  /** Box processes the host read, their namespaces, and those of them in the harness's own. */
  seen: number;
  namespaces: string[];
  inHost: number[];
}

const readNs = (pid: number | 'self'): string | undefined => procLink(`/proc/${pid}/ns/net`);

/**
 * The program itself, once it runs: its executable is the interpreter and its command line carries the marker. A
 * launcher (nsenter, unshare) carries the marker too, in the host's namespace until the moment it enters the box's.
 */
const isProgram = (pid: number, marker: string): boolean =>
  PAYLOAD_INTERPRETER.test(exeBasename(procLink(`/proc/${pid}/exe`) ?? '')) && (procText(`/proc/${pid}/cmdline`)?.includes(marker) ?? false);

/**
 * Runs a program that only sleeps (no network call) in `env` and reads, from the host, the network namespace of the
 * box's processes whose command line carries a fresh marker: before any network probe, proof that the backend put
 * its boxes where a probe's packets meet the lab's decoys and not the real network. Undefined where the backend names
 * no host processes or none carried the marker (a remote box): the host cannot tell.
 */
export async function boxPlacement(env: Environment, timeoutMs = 8000): Promise<Placement | undefined> {
  const hostNs = readNs('self');
  if (!env.hostPids || hostNs === undefined) return undefined;
  const marker = `sandcheck-placement-${randomBytes(6).toString('hex')}`;
  const abort = new AbortController();
  const sink = { write: () => undefined };
  let ended = false;
  const running = env
    .exec({ argv: ['python3', '-c', 'import time; time.sleep(10)', marker], timeoutMs: 12_000, maxOutputBytes: 4096, stdout: sink, stderr: sink, signal: abort.signal })
    .catch(() => undefined)
    .finally(() => (ended = true));
  try {
    const until = Date.now() + timeoutMs;
    while (!ended && Date.now() < until) {
      const pids = (await env.hostPids().catch(() => [] as number[])).filter((pid) => isProgram(pid, marker));
      const seen = pids.flatMap((pid) => {
        const ns = readNs(pid);
        return ns === undefined ? [] : [{ pid, ns }];
      });
      if (seen.length > 0) return { hostNs, seen: seen.length, namespaces: [...new Set(seen.map((s) => s.ns))], inHost: seen.filter((s) => s.ns === hostNs).map((s) => s.pid) };
      await new Promise((r) => setTimeout(r, 50));
    }
    return undefined;
  } finally {
    abort.abort();
    await running;
  }
}

/** Why network probes must not run on a box placed so, or undefined. */
export function placementRefusal(p: Placement | undefined): string | undefined {
  if (!p || p.inHost.length === 0) return undefined;
  return `not run, for safety: the backend was given the run's lab, but ${p.inHost.length} of its box's ${p.seen} process(es) (pid ${p.inHost.slice(0, 3).join(', ')}) ran in the host's own network namespace (${p.hostNs}), where a network probe would reach the real network (a cloud's metadata service) instead of the lab's decoys; run the boxes inside ctx.lab.netnsPath (nsenter --net=…)`;
}

/** The check's outside evidence, for every network probe it let run. */
export const placementLine = (p: Placement): string =>
  `before the run's first network probe, the host read a box's program in ${p.namespaces.join(', ')} (${p.seen} process(es)), not in the host's own ${p.hostNs}`;
