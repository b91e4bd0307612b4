import { unlessAttempted } from '../../model/judge.js';
import { outside, type Evidence } from '../../model/evidence.js';
import type { Judgement, Observation, ProbeContext } from '../../model/probe.js';
import { postureOf, type ProcessIdentity, type ProcessPosture } from '../../lab/host-process.js';
import { identityEvidence, kernelCarried, ownProgram, tiedToExecution, unseen } from './identity.js';

/** One process of the box's own program with what the host read of it. */
export interface Postured {
  id: ProcessIdentity;
  posture: ProcessPosture;
}

/** A rule's answer for one process: what is wrong (crossed), or why it cannot be told (inconclusive). */
export interface PostureFinding {
  bad: string[];
  unknown?: string;
  /** Outside evidence lines for this process. */
  seen?: string[];
}

/**
 * Judges a posture item from the host's reads of /proc/<pid> of the box's own program (DESIGN principle 2).
 * Crossed when any sample shows the hole; held only when every sample's posture was read and none does;
 * inconclusive when the payload did not run, no process of its program was seen, or nothing was readable.
 */
export function judgePosture(
  obs: Observation,
  ctx: ProbeContext,
  what: string,
  rule: (p: Postured) => PostureFinding,
  source: string,
  opts: { fileServers?: boolean } = {},
): Judgement {
  const notRun = unlessAttempted(obs, false);
  if (notRun) return notRun;
  const own = ownProgram(obs);
  const carried = kernelCarried(obs, opts.fileServers);
  const procs = carried?.procs ?? own;
  const base = [...(carried?.evidence ?? []), ...identityEvidence(obs, own)];
  if (procs.length === 0) return { verdict: 'inconclusive', reason: `${unseen(obs)}, so ${what} could not be judged from outside`, evidence: base };
  const lead = carried ? `${carried.lead}: ` : '';
  // The box's files come through the kernel's file servers: without one read, its host mounts are not all seen.
  if (carried && opts.fileServers && (obs.exec.userSpaceKernel?.fileServers.length ?? 0) === 0) {
    return {
      verdict: 'inconclusive',
      reason: `${lead}no file server of that kernel was among the box's host processes, so ${what} could not be judged`,
      evidence: base,
    };
  }
  const postured = procs.flatMap((id) => {
    const posture = postureOf(id);
    return posture ? [{ id, posture }] : [];
  });
  if (postured.length === 0) {
    return {
      verdict: 'inconclusive',
      reason: `${lead}the host could not read the posture (${source}) of any process of the box's program, so ${what} could not be judged`,
      evidence: base,
    };
  }
  // At least one sample must be this very execution's payload (its argv carries the nonce), not some other program of
  // the box; on a user-space kernel the nonce was found in the address space's memory instead.
  if (!carried && !tiedToExecution(procs, ctx.nonce)) {
    return {
      verdict: 'inconclusive',
      reason: `no process whose posture the host read carries this execution's nonce in its command line, so it is not shown to be the payload: ${what} could not be judged`,
      evidence: base,
    };
  }
  const evidence: Evidence[] = [];
  const bad: string[] = [];
  const unknown: string[] = [];
  for (const p of postured) {
    const f = rule(p);
    const who = carried ? carried.who(p.id) : `${p.id.command} (pid ${p.id.pid})`;
    for (const line of f.seen ?? []) evidence.push(outside('host-proc-posture', `${who}: ${line}`, `/proc/${p.id.pid}`));
    for (const b of f.bad) bad.push(`${who} ${b}`);
    if (f.unknown !== undefined) unknown.push(`${who}: ${f.unknown}`);
  }
  const all = [...evidence.slice(0, 24), ...base];
  if (bad.length > 0)
    return {
      verdict: 'crossed',
      reason: `${lead}${bad.slice(0, 4).join('; ')}`,
      evidence: [...bad.slice(0, 16).map((b) => outside('host-proc-posture', b, source)), ...all],
    };
  if (unknown.length > 0) return { verdict: 'inconclusive', reason: `${lead}${unknown.slice(0, 3).join('; ')}`, evidence: all };
  if (postured.length < procs.length) {
    return {
      verdict: 'inconclusive',
      reason: `${lead}the host read the posture of ${postured.length} of ${procs.length} samples of the box's program only`,
      evidence: all,
    };
  }
  if (carried)
    return { verdict: 'held', reason: `${lead}the ${postured.length} processes of it the host read (${source}): ${what} as required`, evidence: all };
  return {
    verdict: 'held',
    reason: `all ${postured.length} samples of the box's own program read from the host (${source}): ${what} as required`,
    evidence: all,
  };
}

/** Capability numbers (linux/capability.h) that open a way out of a box or into the host kernel. */
export const DANGEROUS_CAPABILITIES: Readonly<Record<string, number>> = {
  CAP_DAC_READ_SEARCH: 2,
  CAP_NET_ADMIN: 12,
  CAP_NET_RAW: 13,
  CAP_SYS_MODULE: 16,
  CAP_SYS_RAWIO: 17,
  CAP_SYS_PTRACE: 19,
  CAP_SYS_ADMIN: 21,
  CAP_SYS_BOOT: 22,
  CAP_SYS_TIME: 25,
  CAP_MKNOD: 27,
  CAP_AUDIT_CONTROL: 30,
  CAP_MAC_OVERRIDE: 32,
  CAP_MAC_ADMIN: 33,
  CAP_SYSLOG: 34,
  CAP_PERFMON: 38,
  CAP_BPF: 39,
  CAP_CHECKPOINT_RESTORE: 40,
};

/** The named capabilities set in a /proc/<pid>/status mask; undefined when the mask is not hex. */
export function capabilityNames(mask: string, names: Readonly<Record<string, number>> = DANGEROUS_CAPABILITIES): string[] | undefined {
  if (!/^[0-9a-f]{1,16}$/i.test(mask)) return undefined;
  const bits = BigInt(`0x${mask}`);
  return Object.entries(names)
    .filter(([, bit]) => ((bits >> BigInt(bit)) & 1n) === 1n)
    .map(([name]) => name);
}

export const hasCapability = (mask: string, bit: number): boolean => /^[0-9a-f]{1,16}$/i.test(mask) && ((BigInt(`0x${mask}`) >> BigInt(bit)) & 1n) === 1n;

/** Required namespaces the process shares with the host (the harness's own), by inode from /proc/<pid>/ns. */
export function namespaceRule(required: readonly string[]) {
  return ({ posture }: Postured): PostureFinding => {
    const shared = required.filter((ns) => posture.sharedNamespaces[ns as keyof ProcessPosture['sharedNamespaces']] === true);
    const unread = required.filter((ns) => posture.sharedNamespaces[ns as keyof ProcessPosture['sharedNamespaces']] === undefined);
    const own = required.filter((ns) => posture.sharedNamespaces[ns as keyof ProcessPosture['sharedNamespaces']] === false);
    return {
      bad: shared.length > 0 ? [`shares the host's ${shared.join(', ')} namespace${shared.length > 1 ? 's' : ''}`] : [],
      ...(unread.length > 0 ? { unknown: `/proc/<pid>/ns/{${unread.join(',')}} unreadable` } : {}),
      seen: [
        `own namespaces: ${own.join(', ') || 'none'}; shared with the host: ${
          Object.entries(posture.sharedNamespaces)
            .filter(([, s]) => s)
            .map(([n]) => n)
            .join(', ') || 'none'
        }`,
      ],
    };
  };
}

export function seccompRule({ id }: Postured): PostureFinding {
  if (id.seccomp === null) return { bad: [], unknown: 'no Seccomp field in /proc/<pid>/status (kernel without seccomp?)' };
  return { bad: id.seccomp === 0 ? ['runs without a seccomp filter (Seccomp 0)'] : [], seen: [`Seccomp ${id.seccomp}`] };
}

/** Dangerous bounding-set bits and any ambient capability, over the host's user namespace only. */
export function capabilityRule({ id, posture }: Postured): PostureFinding {
  const bnd = capabilityNames(posture.capBnd);
  const amb = capabilityNames(posture.capAmb, Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`cap${i}`, i])));
  const seen = [
    `CapBnd ${posture.capBnd}, CapAmb ${posture.capAmb}${id.hostUserNamespace ? '' : ' (in its own user namespace: not capabilities over the host)'}`,
  ];
  if (bnd === undefined || amb === undefined)
    return { bad: [], unknown: `unreadable capability sets (CapBnd ${posture.capBnd}, CapAmb ${posture.capAmb})`, seen };
  if (!id.hostUserNamespace) return { bad: [], seen };
  const bad = [
    ...(bnd.length > 0 ? [`keeps ${bnd.join(', ')} in its bounding set`] : []),
    ...(amb.length > 0 ? [`has ambient capabilities (CapAmb ${posture.capAmb})`] : []),
  ];
  return { bad, seen };
}

/** Device-cgroup rules that let a process open block devices (v1 devices.list: `a *:* rwm`, `b …`). */
export const blockRules = (rules: readonly string[]): string[] => rules.filter((r) => /^[ab] \S+ \S*[rw]/.test(r));

/**
 * A host disk is reachable when the box has a way to a block device node of the host (one in its /dev, or
 * CAP_MKNOD / CAP_SYS_ADMIN over the host to make or mount one) and its device cgroup lets it open it.
 */
export function deviceRule({ id, posture }: Postured): PostureFinding {
  const disks = posture.devNodes.filter((d) => d.hostBlockDevice && d.usable);
  const maker = id.hostUserNamespace && (hasCapability(posture.capBnd, 27) || hasCapability(posture.capBnd, 21));
  const cg = posture.deviceCgroup;
  const allows = cg ? blockRules(cg.rules) : undefined;
  const seen = [
    `${posture.devEntriesSeen} /dev entries seen through /proc/<pid>/root; host block device nodes (in /dev or bound in): ${disks.map((d) => `${d.path} (${d.device})`).join(', ') || 'none'}`,
    cg ? `device cgroup ${cg.path}: ${cg.rules.slice(0, 6).join(' | ')}${cg.rules.length > 6 ? ' …' : ''}` : 'no v1 device cgroup readable',
    ...(maker ? ['CAP_MKNOD or CAP_SYS_ADMIN in the bounding set over the host user namespace'] : []),
  ];
  const way = [
    ...(disks.length > 0
      ? [
          `host block device node${disks.length > 1 ? 's' : ''} ${disks
            .slice(0, 4)
            .map((d) => d.path)
            .join(', ')} in the box`,
        ]
      : []),
    ...(maker ? ['can make or mount device nodes (CAP_MKNOD/CAP_SYS_ADMIN over the host)'] : []),
  ];
  if (allows !== undefined && allows.length === 0) return { bad: [], seen };
  if (way.length > 0) {
    if (allows === undefined) return { bad: [], unknown: `${way.join(' and ')}, and no device cgroup the host can read shows whether it may open it`, seen };
    return { bad: [`${way.join(' and ')}, and its device cgroup allows block devices (${allows.slice(0, 3).join(' | ')})`], seen };
  }
  if (posture.devEntriesSeen === 0) {
    // A read-only root of its own, walked whole (a user-space kernel's empty root): no device node is in it, and none can be added.
    const own = posture.ownRoot;
    if (own?.complete === true && own.blockNodes === 0)
      return {
        bad: [],
        seen: [...seen, `its only filesystems are read-only ones of its own; the host walked the whole of them (${own.entries} entries): no block device node`],
      };
    return { bad: [], unknown: "the host saw nothing in the box's /dev (through /proc/<pid>/root), so it cannot show that no host disk node is there", seen };
  }
  return { bad: [], seen };
}

/** The run's own host locations a box must never see, from the probe context. */
export function runPlaces(ctx: ProbeContext): { runId: string; scratchDir: string; decoys: string[] } {
  const scratchDir = ctx.hostProbeDir.replace(/\/[^/]+\/?$/, '');
  return { runId: ctx.runId, scratchDir, decoys: [ctx.decoyDir, ctx.hostProbeDir, ctx.hostDecoys.socketPath] };
}
