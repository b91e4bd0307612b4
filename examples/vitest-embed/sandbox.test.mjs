// Embedding sandcheck in your own vitest run: the adapter's blocking checks first, then one
// test per security probe and per task case, so your CI shows exactly which boundary failed.
//   npx vitest run --config examples/vitest-embed/vitest.config.mjs
// SANDCHECK_BACKEND picks the adapter (a module path or built-in name; default: the example
// module adapter next door); SANDCHECK_ONLY=id,id runs a subset.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POLICY_PRESETS, checkAdapter, loadBackend, runSuite, securitySuite, taskSuite } from 'sandcheck';

const backendSpec = process.env.SANDCHECK_BACKEND ?? fileURLToPath(new URL('../adapter-module/adapter.mjs', import.meta.url));
const only = process.env.SANDCHECK_ONLY?.split(',').filter(Boolean);
const probes = [...securitySuite, ...taskSuite].filter((p) => !only || only.includes(p.id));
const policy = POLICY_PRESETS.ci;

/** @type {import('sandcheck').RunSuiteOutcome | undefined} */
let outcome;
/** @type {string} */
let outDir;

beforeAll(async () => {
  const backend = await loadBackend(backendSpec);
  const check = await checkAdapter(backend, { policy, blockingOnly: true });
  expect(check.summary.blockingFailed, 'the adapter must pass its blocking checks before its verdicts count').toEqual([]);
  outDir = await mkdtemp(join(tmpdir(), 'sandcheck-embed-'));
  outcome = await runSuite({ backend, policy, probes, outDir });
}, 30 * 60_000);

afterAll(async () => {
  if (outDir) await rm(outDir, { recursive: true, force: true });
});

/** @param {string} id */
const securityResult = (id) => outcome?.security.results.find((r) => r.id === id);
/** @param {string} id */
const taskResult = (id) => outcome?.task.results.find((r) => r.id === id);

describe(`security (${policy.name} policy)`, () => {
  for (const probe of probes.filter((p) => p.kind === 'security')) {
    it(`${probe.id}: ${probe.title}`, () => {
      const r = securityResult(probe.id);
      // held, or not applicable for a cause outside the box; crossed, unenforced and inconclusive fail.
      expect(r?.verdict, r?.reason).toMatch(/^(held|not-applicable)$/);
    });
  }
});

describe('task', () => {
  for (const task of probes.filter((p) => p.kind === 'task')) {
    it(`${task.id}: ${task.title}`, () => {
      const r = taskResult(task.id);
      expect(r?.outcome, r?.reason).toBe('as-expected');
    });
  }
});
