import { describeBackends, loadBackend } from '../../backends/registry.js';
import { probeLabSupport } from '../../lab/netns/support.js';
import { EXIT, SandcheckError, errorMessage } from '../errors.js';

/** One line per backend and for the lab: usable, or why not and the command that fixes it. */
export async function doctor(out: NodeJS.WritableStream): Promise<number> {
  const lines: string[] = [];
  for (const b of describeBackends()) {
    try {
      const backend = await loadBackend(b.name);
      await backend.preflight();
      lines.push(`ok       ${b.name.padEnd(16)} ${b.description}`);
    } catch (err) {
      const hint = err instanceof SandcheckError && err.hint ? err.hint : b.install;
      // A backend that is configured by a file of the user's is not missing: it waits for that file.
      const needsFile = err instanceof SandcheckError && /--backend-config/.test(err.message);
      lines.push(needsFile ? `config   ${b.name.padEnd(16)} ${errorMessage(err)}\n         ${hint}` : `missing  ${b.name.padEnd(16)} ${errorMessage(err)}\n         install: ${hint}`);
    }
  }
  const lab = await probeLabSupport();
  lines.push(
    lab.available
      ? `ok       ${'lab'.padEnd(16)} network namespace, decoys and packet witness: network probes run`
      : `missing  ${'lab'.padEnd(16)} ${lab.reason}: network probes will be not-applicable\n         install: ${lab.hint}`,
  );
  out.write(`${lines.join('\n')}\n`);
  return EXIT.ok;
}
