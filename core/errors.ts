/** Stable error codes: tests and users match on these, never on message text. */
export type SandcheckErrorCode =
  | 'CONFIG_INVALID'
  | 'POLICY_NOT_FOUND'
  | 'USAGE'
  | 'BACKEND_UNKNOWN'
  | 'BACKEND_UNAVAILABLE'
  | 'PROBE_UNKNOWN'
  | 'PAYLOAD_MISSING'
  | 'HARNESS'
  | 'PREDICATE'
  // module adapters (--backend <path or package>)
  | 'ADAPTER_INVALID'
  | 'ADAPTER_CHECK_FAILED'
  // rpc adapters (--backend rpc:<command>)
  | 'ADAPTER_UNRESPONSIVE'
  | 'ADAPTER_PROTOCOL'
  | 'ADAPTER_ERROR'
  // crash recovery and reports (issue 16)
  | 'OUT_DIR_UNUSABLE'
  | 'INTERNAL'
  | 'RECOVER_NOTHING'
  | 'RUN_ALIVE'
  // the lab (lab/netns)
  | 'LAB_UNAVAILABLE'
  | 'LAB_INVALID_RUN_ID'
  | 'LAB_EXISTS'
  | 'LAB_SETUP_FAILED'
  | 'LAB_DESTROYED'
  | 'LAB_TEARDOWN_FAILED'
  | 'WITNESS_FAILED'
  // shards (--shard, sandcheck merge)
  | 'MERGE_REFUSED'
  // run --watch-daemon: not a socket, or no container daemon answers on it
  | 'WATCH_DAEMON_INVALID'
  // a network probe's box placed where it could reach a network other than the run's lab
  | 'UNSAFE_NETWORK'
  // the disk filled up while the reports were written (the run journal is kept: report --recover)
  | 'REPORT_WRITE_FAILED';

/** Exit status of the CLI for each class of failure (docs/cli.md, "Exit codes"). */
export const EXIT = {
  ok: 0,
  unexpected: 1,
  inconclusive: 2,
  usage: 3,
  /** A harness bug ended the run: the probes still running were stopped and what was measured was written. */
  internal: 4,
  interrupted: 130,
} as const;

export class SandcheckError extends Error {
  readonly code: SandcheckErrorCode;
  readonly hint: string | undefined;
  constructor(code: SandcheckErrorCode, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SandcheckError';
    this.code = code;
    this.hint = options.hint;
  }

  /** Usage and config errors mean nothing ran: exit 3. */
  get isUsage(): boolean {
    return (
      this.code === 'CONFIG_INVALID' ||
      this.code === 'POLICY_NOT_FOUND' ||
      this.code === 'USAGE' ||
      this.code === 'BACKEND_UNKNOWN' ||
      this.code === 'BACKEND_UNAVAILABLE' ||
      this.code === 'ADAPTER_INVALID' ||
      this.code === 'ADAPTER_CHECK_FAILED' ||
      this.code === 'PROBE_UNKNOWN' ||
      this.code === 'OUT_DIR_UNUSABLE' ||
      this.code === 'RECOVER_NOTHING' ||
      this.code === 'RUN_ALIVE' ||
      this.code === 'MERGE_REFUSED' ||
      this.code === 'WATCH_DAEMON_INVALID'
    );
  }

  format(): string {
    return `sandcheck: ${this.code}: ${this.message}${this.hint ? `\n  hint: ${this.hint}` : ''}`;
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
