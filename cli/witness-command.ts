import { serveWitness } from '../lab/witness/server.js';
import { EXIT } from '../core/errors.js';

export interface WitnessServeOptions {
  listen?: string;
  state?: string;
}

/**
 * `sandcheck witness serve`: keeps a lab (decoys on every address, resolver, packet capture) up until
 * SIGINT or SIGTERM, for runs whose boxes live where they can reach it; then removes everything it made.
 * An existing --state file or --listen socket path is a usage error (exit 3) before anything starts.
 */
export async function witnessServeCommand(opts: WitnessServeOptions, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  // Listening from the start: a SIGTERM sent as soon as the state file appears (or during the lab's start) must
  // still tear down, never kill the process with its lab, socket and state file left behind.
  let stopRequested = false;
  let wake: (() => void) | undefined;
  const stop = (): void => {
    stopRequested = true;
    wake?.();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  try {
    const served = await serveWitness({
      ...(opts.listen ? { listen: opts.listen } : {}),
      ...(opts.state ? { stateFile: opts.state } : {}),
      onNotice: (t) => process.stderr.write(`${t}\n`),
    });
    const info = served.info();
    out.write(
      [
        `witness ${info.witnessId} is up: ${served.state.url}`,
        `  lab namespace ${info.netnsPath}: route the boxes' metadata (169.254.169.254, fd00:ec2::254), documentation-range and DNS traffic into it`,
        opts.state
          ? `  runs: sandcheck run --witness ${opts.state} …`
          : `  runs: SANDCHECK_WITNESS_TOKEN=<token> sandcheck run --witness ${served.state.url} …  (--state FILE writes the token to a 0600 file instead)`,
        '  stop with Ctrl-C (SIGINT) or SIGTERM; if it is killed, `sandcheck clean` removes its namespace, socket and state file',
        '',
      ].join('\n'),
    );
    if (!stopRequested) await new Promise<void>((resolve) => (wake = resolve));
    const closed = await served.close();
    for (const l of closed.leftovers) process.stderr.write(`witness teardown: ${l}\n`);
    return closed.leftovers.length === 0 ? EXIT.ok : EXIT.unexpected;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
