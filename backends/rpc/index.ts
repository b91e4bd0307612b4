import { SandcheckError } from '../../core/errors.js';
import { minimalEnv } from '../../lab/netns/capture.js';
import { RpcConnection } from './connection.js';
import { HelloResultSchema, RPC_PROTOCOL_VERSION } from './protocol.js';
import { RpcBackend, type StartAdapter } from './rpc-backend.js';

export { RpcBackend } from './rpc-backend.js';
export { RPC_PROTOCOL_VERSION, rpcProtocolJsonSchemas } from './protocol.js';

export const RPC_PREFIX = 'rpc:';
const HELLO_MS = 30_000;

/** `rpc:python3 my_adapter.py` → argv, split on whitespace (no shell). */
export function rpcArgv(spec: string): string[] {
  const argv = spec
    .slice(RPC_PREFIX.length)
    .trim()
    .split(/\s+/)
    .filter((a) => a !== '');
  if (argv.length === 0)
    throw new SandcheckError('USAGE', `"${spec}" names no command`, { hint: 'e.g. --backend "rpc:python3 examples/rpc-python/sandcheck_bwrap_adapter.py"' });
  return argv;
}

/**
 * `--backend rpc:<command>`: starts the adapter and greets it (protocol version, name); `options` (the
 * parsed --backend-config) are handed to it in `hello`. A process that does not answer is ADAPTER_INVALID.
 */
export async function createRpcBackend(spec: string, options: unknown): Promise<RpcBackend> {
  const argv = rpcArgv(spec);
  const start: StartAdapter = async (env) => {
    const conn = RpcConnection.start(argv, { env, cwd: process.cwd() });
    try {
      const hello = await conn.call('hello', { protocol: RPC_PROTOCOL_VERSION, options: options ?? null }, HELLO_MS, HelloResultSchema);
      return { conn, hello };
    } catch (err) {
      await conn.close(1000);
      if (err instanceof SandcheckError && (err.code === 'BACKEND_UNAVAILABLE' || err.code === 'CONFIG_INVALID')) throw err;
      const why = err instanceof SandcheckError ? err.message : String(err);
      throw new SandcheckError('ADAPTER_INVALID', `${spec}: the adapter did not complete the protocol v${RPC_PROTOCOL_VERSION} hello: ${why}`, {
        hint: err instanceof SandcheckError && err.hint ? err.hint : 'see docs/rpc-protocol.md',
        cause: err,
      });
    }
  };
  return new RpcBackend(await start(minimalEnv()), start, argv.join(' '));
}
