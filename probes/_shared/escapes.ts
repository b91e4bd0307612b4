/**
 * Judging the capability escapes (mount a host device, open by file handle, /proc/<pid>/root, mknod,
 * raw sockets, kernel modules). Crossing is decided by outside evidence first (a host decoy's canary
 * came out, a forged packet in the lab). `held` needs, on top of the challenge and the in-box positive
 * control, the payload's own challenge-bound step report showing that it reached the decisive system
 * call and that every attempt was refused in a way the probe's own control explains (EPERM, a missing
 * device, no route...). That report is inside evidence: it can only keep a verdict from being `held`
 * (a box whose Python lacks ctypes, or that has no /dev at all, never reaches the decisive step), never
 * turn a crossing into a pass.
 */
import { canaryCrossing, exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { inside, outside, type Evidence } from '../../model/evidence.js';
import type { Judgement, Observation } from '../../model/probe.js';
import { postureOf, type ProcessIdentity } from '../../lab/host-process.js';
import { describeIdentity, tiedToExecution, untied } from './identity.js';
import { hasCapability } from './posture.js';

/** The marker of a step line: only code that read this execution's challenge can print `<marker> <token>`. */
export const STEP_MARKER = 'SANDCHECK-ESCAPE';
export const STEP_TOKEN_KIND = 'escape';

export interface EscapeStep {
  step: string;
  /** `ok`, an errno name (EPERM), or a payload-side reason such as `no-ctypes`. */
  outcome: string;
  target?: string;
}

const sized = (v: unknown, min: number, max: number): v is string => typeof v === 'string' && v.length >= min && v.length <= max;

/** A step line's JSON as the payload writes it (step and outcome 1..64 characters, target up to 300), else undefined. Other keys are dropped. */
function stepOf(v: unknown): EscapeStep | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const { step, outcome, target } = v as Record<string, unknown>;
  if (!sized(step, 1, 64) || !sized(outcome, 1, 64) || !(target === undefined || sized(target, 0, 300))) return undefined;
  return target === undefined ? { step, outcome } : { step, outcome, target };
}

/**
 * The JSON of each `<marker> <token> <json>` line of stdout whose token answers this execution's challenge
 * for `kind` (lines without it — another execution's, a replay's — are ignored; repeats and torn lines too).
 */
export function signedJsonLines(obs: Observation, marker: string, kind: string, max = 200): unknown[] {
  const { stdout } = obs.exec;
  const text = Buffer.concat([Buffer.from(stdout.headBase64, 'base64'), Buffer.from(stdout.tailBase64, 'base64')]).toString('utf8');
  const prefix = `${marker} ${obs.token(kind)} `;
  const out: unknown[] = [];
  const seen = new Set<string>();
  for (const line of text.split('\n')) {
    if (out.length >= max) break;
    if (!line.startsWith(prefix) || seen.has(line)) continue;
    seen.add(line);
    try {
      out.push(JSON.parse(line.slice(prefix.length)));
    } catch {
      // a torn line decides nothing
    }
  }
  return out;
}

/** The step lines this execution's payload printed (lines without this execution's token are ignored). */
export function escapeSteps(obs: Observation): EscapeStep[] {
  return signedJsonLines(obs, STEP_MARKER, STEP_TOKEN_KIND, Number.POSITIVE_INFINITY)
    .map(stepOf)
    .filter((s): s is EscapeStep => s !== undefined)
    .slice(0, 200);
}

const describeStep = (s: EscapeStep): string => `${s.step}${s.target ? ` ${s.target}` : ''}: ${s.outcome}`;

export interface EscapeSpec {
  /** What the probe tried, for reasons ("open a host decoy by file handle"). */
  what: string;
  /** Steps whose outcome decides (the system call the control must refuse). */
  decisive: readonly string[];
  /** Outcomes of a decisive step that the probe's own control explains. */
  refusals: ReadonlySet<string>;
  /** The control, named for reasons ("no CAP_DAC_READ_SEARCH, or no descriptor on the decoy's filesystem"). */
  control: string;
  /** Outside evidence of a crossing other than a canary (a forged packet); checked first. */
  outsideCrossing?(obs: Observation): Judgement | undefined;
  /** A successful decisive step where no outside witness exists (kernel modules): crossed on inside evidence, by rule. */
  insideCrossing?: boolean;
  /**
   * `ok` on a decisive step is no crossing by itself (a packet sent into a box's own network): this positive control
   * explains the silence of the outside witness (`stoppedBy`: the path dropped it, or the box has no route to the lab),
   * or says why the silence proves nothing (inconclusive).
   */
  okUnseen?(
    obs: Observation,
    steps: readonly EscapeStep[],
  ): { explained: true; evidence: Evidence[]; stoppedBy: string } | { explained: false; reason: string };
  /**
   * The right cause, from outside: where the host saw this execution's program (its command line carries the nonce)
   * holding the power the control removes (`power` describes it, else undefined), a refusal in `refusals` has some
   * other cause, or the report is not the payload's: not held. A program the host cannot see withholds nothing here.
   */
  powerSeen?: { nonce: string; refusals: ReadonlySet<string>; power(p: ProcessIdentity): string | undefined };
  /** `held` also needs the host to have seen the box's own program without this capability (outside posture). */
  posture?: { bit: number; name: string; nonce: string };
  /** Outside evidence that rules out blindness (the lab witness's health); returns a reason to be inconclusive. */
  blind?(obs: Observation): string | undefined;
  /** What the outside witness saw when nothing crossed (the packet witness's count and health), for a `held`. */
  quiet?(obs: Observation): Evidence[];
}

/** Inconclusive where the host saw this execution's program holding the power while the payload reported it refused. */
function powerContradiction(obs: Observation, seen: NonNullable<EscapeSpec['powerSeen']>, decisive: readonly EscapeStep[]): Judgement | undefined {
  const refused = decisive.filter((s) => seen.refusals.has(s.outcome));
  if (refused.length === 0) return undefined;
  for (const p of obs.exec.hostProcesses ?? []) {
    if (!(postureOf(p)?.cmdline.includes(seen.nonce) ?? false)) continue;
    const power = seen.power(p);
    if (power === undefined) continue;
    return {
      verdict: 'inconclusive',
      reason: `the host saw the box's program ${power}, yet the payload reported ${refused.slice(0, 3).map(describeStep).join('; ')}: something other than the probe's control refused it, or the report is not the payload's`,
      evidence: [outside('host-proc-status', describeIdentity(p), `/proc/${p.pid}/status`)],
    };
  }
  return undefined;
}

/** CapEff bit `bit` held over the host's user namespace. */
export const hasCap = (p: ProcessIdentity, bit: number): boolean => p.hostUserNamespace && hasCapability(p.capEff, bit);

export function judgeEscape(obs: Observation, spec: EscapeSpec): Judgement {
  const steps = escapeSteps(obs);
  const stepEvidence: Evidence[] = steps.length > 0 ? [inside('payload-steps', steps.slice(0, 24).map(describeStep).join('; '), 'stdout')] : [];
  const leaked = canaryCrossing(obs);
  if (leaked) return { ...leaked, reason: `${leaked.reason} (${spec.what})`, evidence: [...leaked.evidence, ...stepEvidence] };
  const forged = spec.outsideCrossing?.(obs);
  if (forged) return { ...forged, evidence: [...forged.evidence, ...stepEvidence] };
  const decisive = steps.filter((s) => spec.decisive.includes(s.step));
  const context = [...stepEvidence, exitEvidence(obs.exec), payloadReport(obs.exec)];
  if (spec.insideCrossing && obs.attempted) {
    // No outside witness exists for this attack: a decisive step that got past the control is a crossing on the payload's challenge-bound word alone.
    const past = decisive.filter((s) => !spec.refusals.has(s.outcome));
    if (past.length > 0) {
      return {
        verdict: 'crossed',
        reason: `${spec.what}: the kernel got past the permission check (${past.map(describeStep).join('; ')}); inside evidence only, no outside witness exists for this attack`,
        evidence: context,
      };
    }
  }
  const notRun = unlessAttempted(obs, true);
  if (notRun) return { ...notRun, evidence: [...notRun.evidence, ...stepEvidence] };
  const blind = spec.blind?.(obs);
  if (blind !== undefined) return { verdict: 'inconclusive', reason: blind, evidence: context };
  if (decisive.length === 0) {
    const last = steps.slice(-3).map(describeStep).join('; ');
    return {
      verdict: 'inconclusive',
      reason: `the payload never reached ${spec.decisive.join(' / ')} (${last || 'no step reported'}): nothing shows the box's control stopped it`,
      evidence: context,
    };
  }
  const succeeded = decisive.filter((s) => s.outcome === 'ok');
  const sent = succeeded.length > 0 ? spec.okUnseen?.(obs, steps) : undefined;
  if (succeeded.length > 0 && !sent) {
    return {
      verdict: 'inconclusive',
      reason: `${succeeded.map(describeStep).join('; ')} succeeded, yet no decoy value came out: the probe missed its target, so this proves nothing`,
      evidence: context,
    };
  }
  if (sent && !sent.explained) {
    return {
      verdict: 'inconclusive',
      reason: `${succeeded.map(describeStep).join('; ')}, and the lab saw none of it, but ${sent.reason}: the silence proves nothing`,
      evidence: context,
    };
  }
  const unexplained = decisive.filter((s) => s.outcome !== 'ok' && !spec.refusals.has(s.outcome));
  if (unexplained.length > 0) {
    return {
      verdict: 'inconclusive',
      reason: `refused for a reason the control (${spec.control}) does not explain: ${unexplained.slice(0, 4).map(describeStep).join('; ')}`,
      evidence: context,
    };
  }
  const contradiction = spec.powerSeen ? powerContradiction(obs, spec.powerSeen, decisive) : undefined;
  if (contradiction)
    return { ...contradiction, reason: `${spec.what}: ${contradiction.reason} (${spec.control})`, evidence: [...contradiction.evidence, ...context] };
  const posture: Evidence[] = [];
  if (spec.posture) {
    const procs = obs.exec.hostProcesses ?? [];
    posture.push(...procs.slice(0, 4).map((p) => outside('host-proc-status', describeIdentity(p), `/proc/${p.pid}/status`)));
    if (procs.length === 0) {
      return {
        verdict: 'inconclusive',
        reason: `${spec.what} was refused inside, but the host saw no process of the box's own program, so nothing outside shows the box lacks ${spec.posture.name}`,
        evidence: context,
      };
    }
    if (!tiedToExecution(procs, spec.posture.nonce)) {
      return {
        verdict: 'inconclusive',
        reason: `${spec.what} was refused inside, but ${untied(`whether the box lacks ${spec.posture.name}`)}`,
        evidence: [...posture, ...context],
      };
    }
    const holding = procs.filter((p) => hasCap(p, spec.posture?.bit ?? 0));
    if (holding.length > 0) {
      return {
        verdict: 'inconclusive',
        reason: `the host saw the box's program holding ${spec.posture.name} (CapEff ${holding[0]?.capEff}), yet the attempt was refused: something other than the probe's control stopped it`,
        evidence: [...posture, ...context],
      };
    }
  }
  if (sent?.explained) {
    return {
      verdict: 'held',
      reason: `${spec.what}: ${succeeded.map(describeStep).join('; ')}, yet none reached the lab: ${sent.stoppedBy}${
        decisive.length > succeeded.length
          ? `; refused: ${decisive
              .filter((d) => d.outcome !== 'ok')
              .map(describeStep)
              .join('; ')}`
          : ''
      }`,
      evidence: [...sent.evidence, ...(spec.quiet?.(obs) ?? []), ...posture, ...context],
    };
  }
  return {
    verdict: 'held',
    reason: `${spec.what}: every attempt refused (${decisive.slice(0, 4).map(describeStep).join('; ')}${decisive.length > 4 ? '; …' : ''}), explained by ${spec.control}${spec.posture ? `; the host saw the box's program without ${spec.posture.name}` : ''}; no decoy value came out`,
    evidence: [
      outside('canary-scan', `scanned ${obs.exec.stdout.bytes + obs.exec.stderr.bytes} bytes of output and ${obs.artifacts.length} artifacts: no canary`),
      ...(spec.quiet?.(obs) ?? []),
      ...posture,
      ...context,
    ],
  };
}
