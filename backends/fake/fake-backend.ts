import { randomBytes } from 'node:crypto';
import type { Policy } from '../../model/policy.js';
import type { Tristate } from '../../model/observation.js';
import { CHALLENGE_FILE, makeProof, type ExecProof } from '../../lab/proof.js';
import { markOwnCounters } from '../own-counters.js';
import {
  POLICY_ITEMS,
  type Backend,
  type BackendContext,
  type Capabilities,
  type Environment,
  type ExecRequest,
  type ExecResult,
  type GotFile,
  type PutFile,
  type ResourceReport,
} from '../../model/backend-contract.js';

/** What a scripted execution does: output, outcome, and files it leaves behind. */
export interface FakeOutcome {
  stdout?: string | Uint8Array;
  stderr?: string | Uint8Array;
  exitCode?: number | null;
  signal?: string | null;
  startError?: string;
  /** Wait this long before ending (aborts end it early, like a kill). */
  delayMs?: number;
  /** Never end on its own: only an abort stops it. */
  hang?: boolean;
  files?: Record<string, string | Uint8Array>;
  timedOut?: Tristate;
  oomKilled?: Tristate;
  outputTruncated?: Tristate;
  /** Counters the fake claims to have read from outside (a lying backend's claims). */
  resources?: ResourceReport;
}

export interface FakeExecInput {
  args: Record<string, unknown> & { nonce: string; probe: string };
  request: ExecRequest;
  files: ReadonlyMap<string, Uint8Array>;
  ctx: BackendContext;
}

export type FakeScript = (input: FakeExecInput) => FakeOutcome;

/**
 * The challenge answers a payload that really ran would print, computed from the files put in the
 * environment (the challenge file and the sources): scripts use them to look like a payload that ran.
 */
export function fakeProof(input: Pick<FakeExecInput, 'files'>): ExecProof {
  const file = (path: string): Uint8Array => input.files.get(path) ?? new Uint8Array();
  return makeProof(file('payload.py'), file('sandcheck_payload.py'), Buffer.from(file(CHALLENGE_FILE)).toString('utf8').trim());
}

export const fakeMarkers = (input: Pick<FakeExecInput, 'files'>): { start: string; done: string } => {
  const proof = fakeProof(input);
  return { start: `${proof.attemptLine}\n`, done: `${proof.doneLine}\n` };
};

/** The markers of the old protocol (the nonce from argv): what a box that runs nothing can print. */
export const forgedMarkers = (nonce: string): { start: string; done: string } => ({ start: `SANDCHECK-ATTEMPT ${nonce}\n`, done: `SANDCHECK-DONE ${nonce}\n` });

/** A payload's JSON arguments; a program that is not a payload (the harness's own checks) gets empty ones. */
function payloadArgs(raw: string | undefined): FakeExecInput['args'] {
  try {
    return JSON.parse(raw ?? '{}') as FakeExecInput['args'];
  } catch {
    return { nonce: '', probe: '' };
  }
}

class FakeEnvironment implements Environment {
  readonly id = `fake-${randomBytes(3).toString('hex')}`;
  readonly files = new Map<string, Uint8Array>();
  destroyed = 0;

  constructor(
    private readonly backend: FakeBackend,
    private readonly ctx: BackendContext,
  ) {}

  async putFiles(files: readonly PutFile[]): Promise<void> {
    for (const f of files) this.files.set(f.path, f.content);
  }

  async exec(request: ExecRequest): Promise<ExecResult> {
    const args = payloadArgs(request.argv[2]);
    const outcome = this.backend.script({ args, request, files: this.files, ctx: this.ctx });
    if (outcome.startError) {
      return { exitCode: null, signal: null, startError: outcome.startError, timedOut: false, oomKilled: false, outputTruncated: false };
    }
    if (outcome.stdout !== undefined) request.stdout.write(Buffer.from(outcome.stdout));
    if (outcome.stderr !== undefined) request.stderr.write(Buffer.from(outcome.stderr));
    let aborted = false;
    if (outcome.hang || outcome.delayMs) {
      aborted = await new Promise<boolean>((resolve) => {
        if (request.signal.aborted) return resolve(true);
        const timer = outcome.hang ? undefined : setTimeout(() => resolve(false), outcome.delayMs);
        request.signal.addEventListener('abort', () => {
          if (timer) clearTimeout(timer);
          resolve(true);
        });
      });
    }
    for (const [path, content] of Object.entries(outcome.files ?? {})) this.files.set(path, Buffer.from(content));
    return {
      exitCode: aborted ? null : outcome.exitCode !== undefined ? outcome.exitCode : 0,
      signal: aborted ? 'SIGKILL' : (outcome.signal ?? null),
      timedOut: outcome.timedOut ?? false,
      oomKilled: outcome.oomKilled ?? false,
      outputTruncated: outcome.outputTruncated ?? false,
      ...(outcome.resources ? { resources: outcome.resources } : {}),
    };
  }

  async getFiles(paths: readonly string[]): Promise<GotFile[]> {
    return paths.map((path) => {
      const content = this.files.get(path);
      return content ? { path, kind: 'file', size: content.byteLength, content } : { path, kind: 'missing', size: 0 };
    });
  }

  async destroy(): Promise<{ items: string[] }> {
    this.destroyed += 1;
    return { items: [] };
  }
}

/** A fake that also names host processes as the box's (a liar may name any live process). */
class FakeEnvironmentWithPids extends FakeEnvironment {
  async hostPids(): Promise<number[]> {
    return this.namePids();
  }

  constructor(
    backend: FakeBackend,
    ctx: BackendContext,
    private readonly namePids: () => number[],
  ) {
    super(backend, ctx);
  }
}

/** Scripted backend for unit tests: no processes, outcomes decided by the test. */
export class FakeBackend implements Backend {
  readonly name = 'fake';
  readonly description = 'scripted observations for unit tests';
  readonly environments: FakeEnvironment[] = [];

  constructor(
    readonly script: FakeScript,
    private readonly caps: Capabilities = { isolation: 'sandbox', enforces: POLICY_ITEMS },
    private readonly hostPids?: () => number[],
    /** 'own': its counters stand for a built-in backend's; 'claimed': for an outside adapter's (backends/own-counters.ts). */
    counters: 'own' | 'claimed' = 'own',
  ) {
    if (counters === 'own') markOwnCounters(this);
  }

  capabilities(_policy: Policy): Capabilities {
    return this.caps;
  }

  async preflight(): Promise<void> {}

  async create(_policy: Policy, ctx: BackendContext): Promise<Environment> {
    const env = this.hostPids ? new FakeEnvironmentWithPids(this, ctx, this.hostPids) : new FakeEnvironment(this, ctx);
    this.environments.push(env);
    return env;
  }
}
