import { z } from 'zod';
import type { GotFile, PolicyItem, PutFile } from './backend-contract.js';
import type { CanarySet } from './canary.js';
import type { LabTraffic } from './lab-traffic.js';
import type { ExportOutcome } from './export-types.js';
import type { HostFileState } from './host-file.js';
import type { Evidence } from './evidence.js';
import type { ExecObservation } from './observation.js';
import type { Policy } from './policy.js';
import type { Category, ExpectedTaskVerdict, SecurityVerdict, Severity } from './verdict.js';

export { PAYLOAD_INTERPRETER } from './payload.js';

/** A MITRE ATT&CK (Enterprise) technique or sub-technique id, e.g. T1552.005. */
export const AttackTechniqueId = z.string().regex(/^T\d{4}(\.\d{3})?$/, 'an ATT&CK technique id looks like T1552 or T1552.005');
export type AttackTechniqueId = `T${number}` | `T${number}.${number}`;

/** A MITRE CWE id, e.g. CWE-22. */
export const CweId = z.string().regex(/^CWE-\d+$/, 'a CWE id looks like CWE-22');
export type CweId = `CWE-${number}`;

type NonEmpty<T> = readonly [T, ...T[]];

/** What a security probe attacks, in the vocabularies scanners and dashboards share. */
export const ThreatMappingSchema = z.strictObject({
  attack: z.array(AttackTechniqueId).min(1),
  cwe: z.array(CweId).min(1),
});

/** What a probe spec may know about the run when it prepares its payload. */
export interface ProbeContext {
  policy: Policy;
  runId: string;
  /** Fresh per probe run; a correlation label (survivor names, socket contacts), never proof of execution. */
  nonce: string;
  canaries: CanarySet;
  /** Host directory holding the decoy secret files. */
  decoyDir: string;
  /**
   * Host-side decoys: a process holding a canary (and keys in the kernel keyring), a daemon-like socket, an
   * SSH-agent-like socket, an abstract socket in the lab's network namespace (absent without a lab).
   */
  hostDecoys: {
    processPid: number;
    socketPath: string;
    agentSocketPath?: string;
    agentSocketInode?: number;
    abstractName?: string;
    abstractUnavailable?: string;
    /** Descriptions of the decoy keys; empty when the host's keyring refused them (`keyringUnavailable`). */
    keyDescriptions?: string[];
    keyringUnavailable?: string;
  };
  /** A host directory for this execution only (e.g. a heartbeat target); the box should not see it. */
  hostProbeDir: string;
}

/** A process of the user-space kernel that ran this execution (its kernel, and a marked program's address space where one was found), looked up again after destroy. */
export interface CarrierAfterDestroy {
  pid: number;
  role: 'address space' | 'kernel';
  /** The same pid with the same start still ran when the harness stopped waiting for it. */
  running: boolean;
}

/** Everything the harness observed from outside, handed to a judge. */
export interface Observation {
  exec: ExecObservation;
  /** The payload answered this execution's challenge when it started (harness/proof.ts). */
  attempted: boolean;
  /** The payload answered the challenge again when its attempt was complete. */
  finished: boolean;
  /** This execution's challenge answer for a purpose (e.g. the pattern a flood writes). */
  token(kind: string): string;
  /** The in-box positive control (a decoy-shaped value the box may read): did it come out? */
  positiveControl?: { where: 'file' | 'env'; seen: boolean };
  /** Canary values seen in any channel, with the channel (stdout, stderr, artifact:<path>). */
  canaryHits: { label: string; where: string }[];
  artifacts: GotFile[];
  /** What destroy reported as left behind. */
  leftovers: string[];
  /** A host scan saw the probe's survivor process alive while the exec ran (the witness can see the box's processes). */
  survivorSeenAlive?: boolean;
  /** With confirmStopped: the payload's own processes the host still saw running 1 s after the exec returned. */
  runningAfterExec?: string[];
  /** Host processes carrying the probe's survivor name (survivorName) found after destroy (killed by the harness). */
  survivors: string[];
  /**
   * On a user-space kernel, for a probe that watches a survivor: the kernel tied to this execution and, where the
   * survivor's own address space was found by its mark, that address space, after destroy (still running ones are
   * killed by the harness).
   */
  carriersAfterDestroy?: CarrierAfterDestroy[];
  /** Size of hostProbeDir/heartbeat right after destroy and a while later: growth means something still runs. */
  heartbeat?: { afterDestroyBytes: number; laterBytes: number };
  /** Connections to the host decoy socket that carried this execution's nonce. */
  socketContacts: number;
  /** Network probes: where the host read this box's program before the payload ran (harness/network-placement.ts). */
  placement?: string;
  /** Per host decoy socket (daemon-socket, agent-socket, abstract-socket): connections carrying this execution's nonce. */
  decoyContacts?: Record<string, number>;
  /** Entries of a watched real daemon's own event log that name this execution's nonce (one line each). */
  daemonEvents?: { daemon: string; events: string[]; error?: string }[];
  /** What the probe's host cleanup found left on the host by the box (and removed). */
  hostResidue?: string[];
  /** The second, fresh environment of a two-phase probe. */
  followUp?: Observation;
  /** What the lab's decoys and packet witness saw while this execution ran (network probes). */
  network?: LabTraffic;
  /** The companion environment printed its ready marker (lateral movement's positive control). */
  companionReady?: boolean;
  /** The rest of the companion's ready line (after its challenge answer): what it says it made ("made sysv segment"). */
  companionAnnounced?: string;
  /** The export stage: the exporter's decision on the artifacts and what it did to the host. */
  export?: ExportOutcome;
  /** The probe's hostRead files, read by the harness on the host right after the put and again after the exec. */
  hostRead?: { before: HostFileState[]; after: HostFileState[] };
  /** Task cases: what the program left in its workspace besides the files put there, listed by the host (absent where the host cannot see the workspace). */
  workspace?: WorkspaceListing;
}

/** One entry of a workspace listing: a path relative to the workspace, never followed through a link. */
export interface WorkspaceEntry {
  path: string;
  kind: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
}

/** The workspace as the host saw it after the run (bounded; `truncated` when the bound cut it short). */
export interface WorkspaceListing {
  entries: WorkspaceEntry[];
  truncated: boolean;
}

export interface Judgement {
  verdict: SecurityVerdict;
  reason: string;
  evidence: Evidence[];
}

interface ProbeCommon {
  id: string;
  title: string;
  /** Folder holding payload.py: a name under probes/, `tasks/<id>`, or an absolute folder (user and test probes). */
  payload: string;
  /** File in the payload folder to run; payload.py unless said otherwise. */
  payloadFile?: string;
  /** Inline program source (user task cases); replaces the payload file. */
  source?: string;
  /** Interpreter run on payload.py; python3 unless a probe says otherwise. */
  interpreter?: string;
  /** Arguments for the payload (JSON, passed as argv[1] along with the nonce). */
  args?(ctx: ProbeContext): Record<string, unknown>;
  files?(ctx: ProbeContext): PutFile[];
  stdin?(ctx: ProbeContext): Uint8Array;
  /** Workspace-relative files fetched after the run. */
  artifacts?: readonly string[] | ((ctx: ProbeContext) => readonly string[]);
  /**
   * An in-box positive control: a decoy-shaped value put where the box may read it (a workspace
   * file, or the program's environment); the payload reads it the way it reads its target and it
   * must come out, or silence proves nothing.
   */
  positiveControl?: 'file' | 'env';
  /** Sample the box's host processes while it runs (identity probes). */
  sampleProcesses?: boolean;
  /**
   * Which host executables the sampler counts as the box's (default: the interpreter): e.g. also gVisor's
   * Sentry, the host process that carries out the box's system calls.
   */
  sampleProgram?: RegExp;
  /**
   * Box paths the host looks up through /proc/<pid>/root of the box's program while it runs (needs
   * sampleProcesses): the device and inode there, kept beside the sampled identity (lab/root-view.ts).
   */
  rootPaths?: readonly string[];
  /**
   * Who ends the payload's `sc.hold` (SIGURG) once the host has looked; without it the hold runs its whole cap.
   * 'sampled' (needs sampleProcesses): the sampler, once it keeps the identity, posture and root view of the
   * payload's interpreter whose argv carries the nonce. 'marked' (needs watchSurvivor): the host's scan, once it
   * saw the marked process; the sampler then releases nothing, so the scan cannot miss a process released early.
   * A box the host cannot see into (gVisor's Sentry, a remote box) holds the whole cap either way.
   */
  releaseWhenSeen?: 'sampled' | 'marked';
  /**
   * With sampleProcesses: where no process of the box's program is seen, look for the user-space kernel's address
   * space holding this execution's nonce (harness/kernel-carriers.ts), whose host processes identity and posture
   * judges then read in its place. Off by default: each look reads the box's memory. 'marked-program': the payload
   * also runs a program with programMark(nonce) in its environment or arguments, whose own address space is looked
   * for too (and a survivor is named after that mark, not the nonce).
   */
  kernelCarriers?: boolean | 'marked-program';
  /**
   * Its verdict rests on cgroup counters: where an adapter outside sandcheck (a module, an rpc process, an embedding's
   * own backend) reports them, they are its claim, and the host reads the cgroups of the box's program itself
   * (/proc/<pid>/cgroup, lab/box-cgroup.ts) while it runs; only that read is evidence.
   */
  readsCgroup?: boolean;
  /**
   * The probe reaches for the run's host decoy process (its environ, memory, root or keys): held only while that very
   * process still ran when the box had finished (a decoy that died leaves nothing to reach, and silence proves nothing).
   */
  hostDecoyProcess?: boolean;
  /** Scan the host for the survivor's name (survivorName) while it runs: proof the host can see what must not survive. */
  watchSurvivor?: boolean;
  /**
   * Right after the exec returns (before destroy), the host looks for the payload's interpreter still running with
   * this execution's nonce in its command line: an exec that returned on a claimed kill while the program ran on.
   */
  confirmStopped?: boolean;
  /** Watch the host's health while it runs (resource probes). */
  watchHost?: boolean;
  /**
   * Workspace files the harness also reads itself, before the exec and after it, where the backend keeps the
   * workspace on the host (Environment.hostWorkspace): outside evidence that needs no download API.
   */
  hostRead?: readonly string[];
  /** The program runs until the wall limit stops it: the harness waits the whole limit (schedule and shards). */
  runsToWall?: boolean;
  /**
   * For the scheduler: 'wait' when the program mostly sleeps or holds while the host watches, so it may run
   * beside the CPU-bound ones; 'cpu' when it needs a core (timing-sensitive probes). Unset: harness/probe-cost.ts.
   */
  load?: 'cpu' | 'wait';
  /** Run a second phase in a fresh environment with these extra args (lifecycle residue). */
  followUp?(ctx: ProbeContext, first: Observation): Record<string, unknown>;
}

export interface SecurityProbe extends ProbeCommon {
  kind: 'security';
  /** Run only when named with `--only` (suites/allowlist.ts says why), never as part of the default suite. */
  optIn?: boolean;
  category: Category;
  policyItem: PolicyItem;
  severity: Severity;
  remediation: string;
  /** MITRE ATT&CK technique ids of the attack (at least one). */
  attack: NonEmpty<AttackTechniqueId>;
  /** CWE ids of the weakness a crossing shows (at least one). */
  cwe: NonEmpty<CweId>;
  /** A second environment of the same run that runs alongside (lateral movement); it prints `SANDCHECK-READY <nonce>`. */
  companion?: { payload: string; args(ctx: ProbeContext): Record<string, unknown> };
  /**
   * After destroy: removes what this execution's box may have left in host-wide kernel objects (named with
   * the nonce) and says what it found; a finding is outside evidence.
   */
  hostCleanup?(ctx: ProbeContext): Promise<string[]>;
  /**
   * Who enforces the item: the backend (default; not-applicable when it does not claim it) or the
   * harness's own exporter (always runs).
   */
  enforcedBy?: 'backend' | 'exporter';
  /**
   * Why this machine cannot test the item at all (a cause outside the box), or why the policy asks nothing of it (the
   * allowlist probes without an allowlist): not-applicable without running.
   */
  hostPrecondition?(ctx: ProbeContext): string | undefined;
  judge(obs: Observation, ctx: ProbeContext): Judgement;
}

export interface PredicateResult {
  accepted: boolean;
  reason: string;
  evidence?: Evidence[];
}

/** One candidate program of a correction loop. */
export interface CandidateProgram {
  payload?: string;
  payloadFile?: string;
  source?: string;
}

/** A legitimate task (or a plausible wrong one) and the completion predicate checked outside the box. */
export interface TaskCase extends ProbeCommon {
  kind: 'task';
  policyItem: string;
  expected: ExpectedTaskVerdict;
  /**
   * The case is judged only by what the host sees of the workspace (stray files beside the declared outputs): where
   * the host cannot list a box's workspace (a daemon's volume, a module or remote box), it is not-applicable.
   */
  needsWorkspaceListing?: boolean;
  /**
   * Candidate programs tried in order (generate → execute → observe → correct). Each attempt after
   * the first gets only limited diagnostics of the previous one in feedback.json.
   */
  attempts?: readonly CandidateProgram[];
  /** Where the case came from: built-in, or the user file that defined it. */
  origin?: string;
  predicate(obs: Observation, ctx: ProbeContext): PredicateResult;
}

export type ProbeSpec = SecurityProbe | TaskCase;
