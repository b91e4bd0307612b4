/** Synchronous cleanups run when this process exits or is told to stop; each runs at most once. */
type Cleanup = () => void;

const cleanups = new Set<Cleanup>();
const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
let installed = false;

function runAll(): void {
  for (const cleanup of [...cleanups]) {
    cleanups.delete(cleanup);
    try {
      cleanup();
    } catch {
      // Best effort while exiting.
    }
  }
}

function onSignal(sig: NodeJS.Signals): void {
  runAll();
  uninstall();
  // Runs first (prepended), so signal-exit (execa's cleanup), which re-raises only when it is the sole
  // listener, sees us gone; with no listener left at all we restore the default action ourselves.
  if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
}

const signalHandlers = new Map<NodeJS.Signals, () => void>(SIGNALS.map((sig) => [sig, () => onSignal(sig)]));

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', runAll);
  for (const [sig, handler] of signalHandlers) process.prependListener(sig, handler);
}

function uninstall(): void {
  if (!installed) return;
  installed = false;
  process.off('exit', runAll);
  for (const [sig, handler] of signalHandlers) process.off(sig, handler);
}

/** Registers `cleanup`; the returned function unregisters it (call it once the resource is released normally). */
export function onProcessExit(cleanup: Cleanup): () => void {
  cleanups.add(cleanup);
  install();
  return () => {
    cleanups.delete(cleanup);
    if (cleanups.size === 0) uninstall();
  };
}
