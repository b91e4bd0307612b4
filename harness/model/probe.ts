import type { GotFile, PolicyItem, PutFile } from '../../backends/contract.js';
import type { CanarySet } from '../../lab/canaries.js';
import type { Evidence } from './evidence.js';
import type { ExecObservation } from './observation.js';
import type { Policy } from './policy.js';
import type { Category, ExpectedTaskVerdict, SecurityVerdict, Severity } from './verdict.js';

/** What a probe spec may know about the run when it prepares its payload. */
export interface ProbeContext {
  policy: Policy;
  runId: string;
  /** Fresh per execution; the payload echoes it so "it ran" is provable. */
  nonce: string;
  canaries: CanarySet;
  /** Host directory holding the decoy secret files. */
  decoyDir: string;
}

/** Everything the harness observed from outside, handed to a judge. */
export interface Observation {
  exec: ExecObservation;
  /** The payload printed its nonce-stamped start marker (it really started). */
  attempted: boolean;
  /** The payload printed its nonce-stamped end marker (it finished its attempt). Inside evidence. */
  finished: boolean;
  /** Canary values seen in any channel, with the channel (stdout, stderr, artifact:<path>). */
  canaryHits: { label: string; where: string }[];
  artifacts: GotFile[];
  leftovers: string[];
}

export interface Judgement {
  verdict: SecurityVerdict;
  reason: string;
  evidence: Evidence[];
}

interface ProbeCommon {
  id: string;
  title: string;
  /** Folder under probes/ holding payload.py (an absolute folder for user and test probes). */
  payload: string;
  /** Interpreter run on payload.py; python3 unless a probe says otherwise. */
  interpreter?: string;
  /** Arguments for the payload (JSON, passed as argv[1] along with the nonce). */
  args?(ctx: ProbeContext): Record<string, unknown>;
  files?(ctx: ProbeContext): PutFile[];
  stdin?(ctx: ProbeContext): Uint8Array;
  /** Workspace-relative files fetched after the run. */
  artifacts?: readonly string[];
}

export interface SecurityProbe extends ProbeCommon {
  kind: 'security';
  category: Category;
  policyItem: PolicyItem;
  severity: Severity;
  remediation: string;
  judge(obs: Observation, ctx: ProbeContext): Judgement;
}

export interface PredicateResult {
  accepted: boolean;
  reason: string;
  evidence?: Evidence[];
}

/** A legitimate task (or a plausible wrong one) and the completion predicate checked outside the box. */
export interface TaskCase extends ProbeCommon {
  kind: 'task';
  policyItem: string;
  expected: ExpectedTaskVerdict;
  predicate(obs: Observation, ctx: ProbeContext): PredicateResult;
}

export type ProbeSpec = SecurityProbe | TaskCase;
