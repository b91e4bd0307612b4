import { readFile } from 'node:fs/promises';
import { execa } from 'execa';
import { LabError } from './errors.js';
import { findTool, packageFor, type LabTool } from './tools.js';

export type LabSupport = { readonly available: true } | { readonly available: false; readonly reason: string; readonly hint: string };

const CAP_NET_ADMIN = 12n;
const CAP_SYS_ADMIN = 21n;

async function effectiveCaps(): Promise<bigint | undefined> {
  try {
    const status = await readFile('/proc/self/status', 'utf8');
    const hex = /^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1];
    return hex === undefined ? undefined : BigInt(`0x${hex}`);
  } catch {
    return undefined;
  }
}

function missing(tool: LabTool): LabSupport {
  return {
    available: false,
    reason: `\`${tool}\` is not installed`,
    hint: `install it (Debian: apt-get install -y ${packageFor(tool)}) or mark network probes not-applicable`,
  };
}

async function check(requireWitness: boolean): Promise<LabSupport> {
  if (process.platform !== 'linux') {
    return {
      available: false,
      reason: `network namespaces need Linux (this is ${process.platform})`,
      hint: 'run the network probes on a Linux host',
    };
  }
  const caps = await effectiveCaps();
  const has = (bit: bigint): boolean => caps !== undefined && ((caps >> bit) & 1n) === 1n;
  if (process.geteuid?.() !== 0 || !has(CAP_NET_ADMIN) || !has(CAP_SYS_ADMIN)) {
    return {
      available: false,
      reason: 'creating a network namespace needs root with CAP_NET_ADMIN and CAP_SYS_ADMIN',
      hint: 'run sandcheck as root (in a container: --cap-add NET_ADMIN --cap-add SYS_ADMIN, or --privileged)',
    };
  }
  const tools: LabTool[] = requireWitness ? ['ip', 'nsenter', 'tcpdump'] : ['ip', 'nsenter'];
  for (const tool of tools) if (findTool(tool) === undefined) return missing(tool);
  const ip = findTool('ip') ?? 'ip';
  const listed = await execa(ip, ['netns', 'list'], { reject: false, timeout: 5000 });
  if (listed.exitCode !== 0) {
    return {
      available: false,
      reason: `\`ip netns list\` failed: ${listed.stderr.trim() || `exit ${String(listed.exitCode)}`}`,
      hint: 'check that iproute2 supports network namespaces and /run is writable',
    };
  }
  return { available: true };
}

const memo = new Map<boolean, Promise<LabSupport>>();

/** Whether a lab can be made here, and if not why; network probes use this to say `not-applicable: no lab`. */
export function probeLabSupport(options: { requireWitness?: boolean } = {}): Promise<LabSupport> {
  const requireWitness = options.requireWitness ?? true;
  let result = memo.get(requireWitness);
  if (result === undefined) {
    result = check(requireWitness);
    memo.set(requireWitness, result);
  }
  return result;
}

export async function assertLabSupport(options: { requireWitness?: boolean } = {}): Promise<void> {
  const support = await probeLabSupport(options);
  if (!support.available) throw new LabError('LAB_UNAVAILABLE', `no lab: ${support.reason}`, { hint: support.hint });
}
