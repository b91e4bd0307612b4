/**
 * The name prefixes of every cgroup sandcheck's backends make, in one place: each sweep takes only its own
 * names, and the ownership journal finds a dead run's cgroups by these names plus the run id.
 */
export const CGROUP_NAMES = {
  /** bwrap: `sandcheck-<runId>-<env>` (and its probe groups). */
  bwrap: 'sandcheck-',
  /** Docker's per-environment parent, `sandcheck-docker-<runId>-<env>`, with the containers' cgroups inside. */
  dockerParent: 'sandcheck-docker-',
  /** The process control's CPU meters, `sandcheck-ctl-<runId>-<env>`. */
  controlMeter: 'sandcheck-ctl-',
  /** The Python rpc example adapter's boxes (examples/rpc-python), `sandcheck-rpcpy-<…>`. */
  rpcExample: 'sandcheck-rpcpy-',
  /** The command backend: `sccmd-<runId>-<env>`. */
  command: 'sccmd-',
} as const;

/** Names under bwrap's `sandcheck-` that belong to another backend, whatever their shape (without the common prefix). */
export const BWRAP_SIBLING_PREFIXES: readonly string[] = [CGROUP_NAMES.dockerParent, CGROUP_NAMES.controlMeter, CGROUP_NAMES.rpcExample].map((p) =>
  p.slice(CGROUP_NAMES.bwrap.length),
);

/** The prefixes of the cgroups a run with this id may have made, on any backend. */
export function runCgroupPrefixes(runId: string): string[] {
  return [CGROUP_NAMES.bwrap, CGROUP_NAMES.dockerParent, CGROUP_NAMES.command, CGROUP_NAMES.controlMeter].map((p) => `${p}${runId}-`);
}
