import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds each long file took in a full CI run on this machine kind (2 cores). On a fresh clone vitest has no
 * timings of its own and starts the largest files first, which put the two longest (short files of long runs)
 * last, with one worker left idle beside them.
 */
export const EXPECTED_SECONDS: Readonly<Record<string, number>> = {
  'test/e2e/docker-compare.test.ts': 592,
  'test/integration/chaos.test.ts': 558,
  'test/e2e/adapter-module.test.ts': 207,
  'test/integration/escapes-docker.test.ts': 204,
  'test/e2e/default-run.test.ts': 164,
  'test/integration/bwrap-weakened.test.ts': 87,
  'test/integration/podman.test.ts': 81,
  'test/integration/command-backend.test.ts': 73,
  'test/e2e/cli.test.ts': 62,
  'test/integration/exposure-docker.test.ts': 61,
  'test/integration/docker-backend.test.ts': 59,
  'test/e2e/shards.test.ts': 57,
  'test/integration/escapes-local.test.ts': 53,
  'test/e2e/witness-serve.test.ts': 51,
  'test/e2e/watch-daemon.test.ts': 50,
  'test/integration/docker-config.test.ts': 49,
  'test/integration/adapter-check.test.ts': 46,
  'test/integration/posture-docker.test.ts': 44,
};

/** Longest first within each project (the order that leaves no worker idle at the end), the rest as vitest sorts them. */
export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const root = this.ctx.config.root;
    const seconds = (f: TestSpecification): number => EXPECTED_SECONDS[relative(root, f.moduleId)] ?? 0;
    const order = new Map(base.map((f, i) => [f, i]));
    return [...base].sort((a, b) => {
      const group = a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder;
      if (group !== 0) return group;
      if (a.project.name !== b.project.name) return a.project.name < b.project.name ? -1 : 1;
      return seconds(b) - seconds(a) || (order.get(a) ?? 0) - (order.get(b) ?? 0);
    });
  }
}
