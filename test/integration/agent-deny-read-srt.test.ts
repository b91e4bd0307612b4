/**
 * read-denied-path against srt given the deny-list in its own settings (filesystem.denyRead naming the workspace's
 * deny-listed files) and claiming files.denyRead: what srt's denyRead does for files inside a readable, writable
 * workspace (issue 40; public reports say such an entry can be silently ignored). Measured with srt 0.0.78: the files
 * named by path are hidden (held); the globs `*.pem` and `id_*` are silently ignored (crossed by those two files).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingRequirements } from '../../backends/presets/catalog.js';
import { PresetBackend } from '../../backends/presets/preset-backend.js';
import { SRT_SETTINGS, srtPreset } from '../../backends/presets/srt.js';
import { commandRuntime, parseCommandConfig } from '../../backends/command/index.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { packageRoot } from '../../core/paths.js';
import { loadPolicy } from '../../harness/policy-loader.js';
import { openRunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { securitySuite } from '../../suites/security.js';

const explain = (r: SecurityResult | undefined): string =>
  r
    ? `${r.id}: ${r.verdict} (claimed ${r.claimed}): ${r.reason}\n  ${r.evidence.map((e) => `[${e.source} ${e.witness}] ${e.detail.slice(0, 300)}`).join('\n  ')}`
    : 'did not run';

describe('srt with the deny-list in its settings', () => {
  it.each([
    { how: 'the files named', denyRead: ['./.env', './config/deploy.pem', './.ssh/id_ed25519'], want: 'held' },
    // srt 0.0.78 on Linux: '.env' (a path relative to the working directory) is hidden, the globs are silently ignored.
    { how: "the agent policy's globs", denyRead: ['.env', '*.pem', 'id_*'], want: 'crossed' },
  ])(
    'read-denied-path under the agent policy, claimed, srt denying $how: $want',
    async ({ denyRead, want }) => {
      const settings = { ...SRT_SETTINGS, filesystem: { ...SRT_SETTINGS.filesystem, denyRead } };
      const def = srtPreset('srt-deny-list', 'srt denying reads of the deny-listed workspace files', settings, ['network.egress', 'files.denyRead'], {});
      const missing = await missingRequirements(def);
      if (missing.length > 0) {
        console.log(`srt not installed (${missing.map((m) => m.binary).join(', ')}): ${def.install}`);
        return;
      }
      const { raw: base, configDir } = await def.config();
      // The shared reasons say srt's settings deny nothing in the workspace: these do, and the item is claimed.
      const reasons = { ...(base.notClaimedReasons as Record<string, string>) };
      delete reasons['files.denyRead'];
      const raw = { ...base, notClaimedReasons: reasons };
      const backend = new PresetBackend(def, await commandRuntime(parseCommandConfig(raw, 'srt-deny-list'), 'srt-deny-list', configDir));
      const policy = await loadPolicy(join(packageRoot(), 'examples', 'agent-policy.yaml'));
      const run = await openRunContext(`rsdl${randomBytes(2).toString('hex')}`);
      try {
        const probe = securitySuite.find((p) => p.id === 'read-denied-path');
        if (!probe) throw new Error('no read-denied-path');
        const { security } = await new Runner({ backend, policy, probes: [probe], run, concurrency: 1 }).run();
        const r = security.find((s) => s.id === 'read-denied-path');
        console.log(explain(r));
        expect(r?.claimed).toBe(true);
        expect(r?.verdict, explain(r)).toBe(want);
        if (want === 'crossed') {
          expect(r?.reason).toMatch(/config\/deploy\.pem .*\.ssh\/id_ed25519/);
          expect(r?.reason).not.toMatch(/\.env/);
        }
      } finally {
        await run.dispose();
      }
    },
    120_000,
  );
});
