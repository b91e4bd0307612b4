import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import type { Environment } from '../model/backend-contract.js';
import { exeBasename, procLink, procText } from '../core/proc-files.js';
import { PAYLOAD_INTERPRETER } from './host-observers.js';
import { namespaceLinks } from './netns-links.js';

/** Where the processes of a box sat, as the host read their network namespaces. */
export interface Placement {
  /** The harness's own network namespace (the host's: the run's lab is a namespace it made beside it). */
  hostNs: string;
  /** Box processes the host read, their namespaces, and those of them in the harness's own. */
  seen: number;
  namespaces: string[];
  inHost: number[];
  /** Each namespace of the box that is neither the host's nor the lab's, with its links as the host read them. */
  others: OtherNamespace[];
}

/** A box namespace of its own: contained when every link leads only into the lab (or nowhere). */
export interface OtherNamespace {
  ns: string;
  contained: string[];
  /** Links that may lead elsewhere; non-empty means the namespace may reach a network that is not the lab. */
  open: string[];
  /** Why the host could not read its links (then it counts as open). */
  unread?: string;
}

const readNs = (pid: number | 'self'): string | undefined => procLink(`/proc/${pid}/ns/net`);

/**
 * The program itself, once it runs: its executable is the interpreter and its command line carries the marker. A
 * launcher (nsenter, unshare) carries the marker too, in the host's namespace until the moment it enters the box's.
 */
const isProgram = (pid: number, marker: string): boolean =>
  PAYLOAD_INTERPRETER.test(exeBasename(procLink(`/proc/${pid}/exe`) ?? '')) && (procText(`/proc/${pid}/cmdline`)?.includes(marker) ?? false);

/** Sleeps (no network call) until the host has looked: SIGURG ends it with exit 0, so its exec returns without an abort. */
const SLEEPER = 'import signal, sys, time\nsignal.signal(signal.SIGURG, lambda *_: sys.exit(0))\ntime.sleep(10)';

/**
 * Runs a program that only sleeps (no network call) in `env` and reads, from the host, the network namespace of the
 * box's processes whose command line carries a fresh marker: before a network probe's payload, proof that the backend
 * put its box where the probe's packets meet the lab's decoys and not the real network. Undefined where the backend
 * names no host processes or none carried the marker (a remote box): the host cannot tell. Once read, the program is
 * told to end (an aborted exec kills a whole container on some backends, and the environment is still to be used);
 * only a program never seen is aborted.
 */
export async function boxPlacement(env: Environment, labNetnsPath: string | undefined, timeoutMs = 8000): Promise<Placement | undefined> {
  const hostNs = readNs('self');
  const labNs =
    labNetnsPath === undefined
      ? undefined
      : await stat(labNetnsPath).then(
          (s) => `net:[${s.ino}]`,
          () => undefined,
        );
  if (!env.hostPids || hostNs === undefined) return undefined;
  const marker = `sandcheck-placement-${randomBytes(6).toString('hex')}`;
  const abort = new AbortController();
  const sink = { write: () => undefined };
  let ended = false;
  const running = env
    .exec({ argv: ['python3', '-c', SLEEPER, marker], timeoutMs: 12_000, maxOutputBytes: 4096, stdout: sink, stderr: sink, signal: abort.signal })
    .catch(() => undefined)
    .finally(() => (ended = true));
  let seen: { pid: number; ns: string }[] = [];
  try {
    const until = Date.now() + timeoutMs;
    while (!ended && Date.now() < until) {
      const pids = (await env.hostPids().catch(() => [] as number[])).filter((pid) => isProgram(pid, marker));
      seen = pids.flatMap((pid) => {
        const ns = readNs(pid);
        return ns === undefined ? [] : [{ pid, ns }];
      });
      if (seen.length > 0) {
        const namespaces = [...new Set(seen.map((s) => s.ns))];
        const others: OtherNamespace[] = [];
        // Read while the program still sleeps in it: a namespace is only reachable through a process in it.
        for (const ns of namespaces.filter((n) => n !== hostNs && n !== labNs)) {
          const pid = seen.find((s) => s.ns === ns)?.pid ?? 0;
          others.push(await otherNamespace(ns, pid, labNetnsPath));
        }
        return { hostNs, seen: seen.length, namespaces, inHost: seen.filter((s) => s.ns === hostNs).map((s) => s.pid), others };
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return undefined;
  } finally {
    // Told until it ends (a signal sent before its handler was set is ignored); an abort only for a program never
    // seen, or one that does not end.
    for (const until = Date.now() + 3000; seen.length > 0 && !ended && Date.now() < until; await new Promise((r) => setTimeout(r, 50))) {
      for (const { pid } of seen) {
        try {
          process.kill(pid, 'SIGURG');
        } catch {
          // gone already
        }
      }
    }
    if (!ended) abort.abort();
    await running;
  }
}

async function otherNamespace(ns: string, pid: number, labNetnsPath: string | undefined): Promise<OtherNamespace> {
  if (labNetnsPath === undefined) return { ns, contained: [], open: [], unread: 'the run has no lab to compare with' };
  try {
    return { ns, ...(await namespaceLinks(pid, labNetnsPath)) };
  } catch (err) {
    return { ns, contained: [], open: [], unread: `nsenter/ip could not read its links: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}` };
  }
}

const isOpen = (o: OtherNamespace): boolean => o.open.length > 0 || o.unread !== undefined;

/** Why network probes must not run on a box placed so, or undefined. */
export function placementRefusal(p: Placement | undefined): string | undefined {
  if (!p) return undefined;
  const open = p.others.find(isOpen);
  if (p.inHost.length === 0 && open) {
    const what = open.unread ?? `it has ${open.open.join('; ')}`;
    return `not run, for safety: the box's program ran in a network namespace of its own (${open.ns}) that may lead to a network other than the run's lab: ${what}. A network probe there could reach the real network instead of the lab's decoys, and its silence would prove nothing; run the boxes inside ctx.lab.netnsPath, or in a namespace whose only links are lo or veths whose other end is in the lab`;
  }
  if (p.inHost.length === 0) return undefined;
  return `not run, for safety: the backend was given the run's lab, but ${p.inHost.length} of its box's ${p.seen} process(es) (pid ${p.inHost.slice(0, 3).join(', ')}) ran in the host's own network namespace (${p.hostNs}), where a network probe would reach the real network (a cloud's metadata service) instead of the lab's decoys; run the boxes inside ctx.lab.netnsPath (nsenter --net=…)`;
}

/** The check's outside evidence, for every network probe it let run. */
export const placementLine = (p: Placement): string => {
  const links = p.others.map((o) => `${o.ns} has only ${o.contained.join(', ') || 'no links'}`).join('; ');
  return `before the payload, the host read this box's program (a sleeping marker) in ${p.namespaces.join(', ')} (${p.seen} process(es)), not in the host's own ${p.hostNs}${links ? `; ${links}` : " (the lab's)"}`;
};
