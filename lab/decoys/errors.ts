/** Typed errors raised by the lab's decoy services. */

export type DecoyErrorCode = 'BIND_FAILED' | 'CONFIG_INVALID' | 'WAIT_TIMEOUT';

export class DecoyError extends Error {
  readonly code: DecoyErrorCode;

  constructor(code: DecoyErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DecoyError';
    this.code = code;
  }
}

/** A decoy could not bind or listen on its address (in use, not local, no permission). */
export class DecoyBindError extends DecoyError {
  readonly host: string;
  readonly port: number;
  readonly proto: 'tcp' | 'udp';
  /** The system error code, e.g. `EADDRINUSE`, `EADDRNOTAVAIL`, `EACCES`. */
  readonly systemCode: string | undefined;

  constructor(proto: 'tcp' | 'udp', host: string, port: number, cause: unknown) {
    const systemCode = systemErrorCode(cause);
    super('BIND_FAILED', `cannot bind ${proto} ${formatHostPort(host, port)}: ${systemCode ?? String(cause)}`, {
      cause,
    });
    this.name = 'DecoyBindError';
    this.host = host;
    this.port = port;
    this.proto = proto;
    this.systemCode = systemCode;
  }
}

/** The lab configuration did not validate. */
export class LabConfigError extends DecoyError {
  readonly issues: readonly string[];

  constructor(issues: readonly string[]) {
    super('CONFIG_INVALID', `invalid lab configuration: ${issues.join('; ')}`);
    this.name = 'LabConfigError';
    this.issues = issues;
  }
}

/** `DecoyLog.waitFor` saw no matching event in time. */
export class DecoyWaitTimeoutError extends DecoyError {
  constructor(timeoutMs: number) {
    super('WAIT_TIMEOUT', `no matching decoy event within ${timeoutMs} ms`);
    this.name = 'DecoyWaitTimeoutError';
  }
}

export function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

function systemErrorCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') {
    return err.code;
  }
  return undefined;
}
