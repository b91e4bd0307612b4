/**
 * The podman presets run a root filesystem sandcheck builds (seconds of work and disk): it is made at the first
 * box, never when `sandcheck backends` or `doctor` loads and preflights the preset.
 */
import { describe, expect, it, vi } from 'vitest';
import { loadPreset } from '../../backends/presets/preset-backend.js';
import { backendEntry } from '../../cli/backends-command.js';
import { SandcheckError } from '../../core/errors.js';
import { CI_POLICY } from '../../model/policy.js';

const made = vi.hoisted(() => ({ calls: 0 }));
vi.mock('../../backends/presets/podman-rootfs.js', () => ({
  PODMAN_ROOTFS_DIR: '/nonexistent/podman-rootfs',
  ensurePodmanRootfs: () => {
    made.calls += 1;
    return Promise.reject(new SandcheckError('BACKEND_UNAVAILABLE', 'the test refuses to build a root filesystem'));
  },
}));

describe('podman presets: the root filesystem is made at the first box', () => {
  for (const name of ['podman', 'podman-runsc']) {
    it(`${name}: loading, claims and preflight (what backends and doctor do) build nothing; creating a box does`, async () => {
      made.calls = 0;
      const entry = await backendEntry(`preset:${name}`, name, 'apt-get install -y podman', (n) => loadPreset(n.slice('preset:'.length)));
      expect(['available', 'unavailable']).toContain(entry.status);
      expect(entry.claims).toContain('files.hostPaths');
      expect(made.calls).toBe(0);

      const backend = await loadPreset(name);
      const err = await backend.create(CI_POLICY, { runId: 'imagetest1', controllerEnv: {}, scratchDir: '/nonexistent/scratch' }).catch((e: unknown) => e);
      expect(made.calls).toBe(1);
      expect(String(err)).toMatch(/the test refuses to build a root filesystem/);
    });
  }
});
