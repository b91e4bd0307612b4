import type { RunEnvironment } from '../../model/environment.js';
import type { SecurityResult, TaskResult } from '../../model/scorecard.js';
import { policySha256 } from '../../harness/environment-facts.js';
import { securityScorecard, taskScorecard, type BackendFacts } from '../../harness/scorecard-builder.js';
import type { MatrixInput } from '../../reports/matrix-model.js';
import { validateScorecard } from '../../reports/validate.js';
import { fakeObservation } from './observation.js';
import { FAST_POLICY } from './fake-run.js';
import { secResult, taskResult } from '../unit/gate-fixtures.js';

/** Scorecards for `sandcheck matrix` tests, built by the real scorecard builders and checked against the published schemas. */

const env = (label?: string, extraTools: RunEnvironment['tools'] = []): RunEnvironment => ({
  ...(label !== undefined ? { label } : {}),
  sandcheckVersion: '0.1.0',
  node: 'v20.19.0',
  kernel: '6.1.0-test',
  cgroupMode: 'v2',
  policySha256: policySha256(FAST_POLICY),
  tools: [
    { tool: 'bwrap', status: 'ok', version: 'bubblewrap 0.8.0' },
    { tool: 'python3', status: 'ok', version: 'Python 3.11.2' },
    { tool: 'docker', status: 'missing' },
    ...extraTools,
  ],
});

const withStartup = <T extends SecurityResult | TaskResult>(r: T, startupMs: number): T => ({ ...r, observation: fakeObservation({ startupMs }).exec });

/** The two cards of one run as `sandcheck run` writes them: the real builders, then the published schemas. */
export function cards(
  backend: string,
  security: SecurityResult[],
  task: TaskResult[],
  opts: { enforces?: string[]; label?: string; isolation?: 'none' | 'sandbox'; tools?: RunEnvironment['tools'] } = {},
): MatrixInput {
  const facts: BackendFacts = { name: backend, description: 'fixture', isolation: opts.isolation ?? 'sandbox', enforces: opts.enforces ?? [] };
  const meta = { runId: `r-${backend}`, startedAt: new Date(0), finishedAt: new Date(0), interrupted: false, environment: env(opts.label, opts.tools) };
  const s = securityScorecard(facts, FAST_POLICY, meta, security);
  const t = taskScorecard(facts, FAST_POLICY, meta, task);
  for (const card of [s, t]) {
    const check = validateScorecard(card.scorecard, card);
    if (!check.valid) throw new Error(`fixture ${card.scorecard} card does not match its schema: ${check.errors}`);
  }
  return { kind: 'cards', source: `/out/${backend}`, security: s, task: t };
}

export const sec = (
  id: string,
  verdict: SecurityResult['verdict'],
  category: SecurityResult['category'],
  opts: Parameters<typeof secResult>[2] = {},
): SecurityResult => ({ ...secResult(id, verdict, opts), category });

export const PWN = `<script>document.title='pwned'</script> "quoted" & | pipe \`tick\``;

export function matrixFixture(): MatrixInput[] {
  const process = cards(
    'process',
    [
      withStartup(sec('net-metadata', 'crossed', 'network'), 10),
      withStartup(sec('files-secret', 'crossed', 'files'), 30),
      withStartup(sec('res-fork', 'crossed', 'resources'), 20),
    ],
    [withStartup(taskResult('task-csv', 'as-expected'), 40)],
    { isolation: 'none' },
  );
  const bwrap = cards(
    'bwrap',
    [
      sec('files-secret', 'held', 'files', { policyItem: 'files.hostRead' }),
      sec('net-metadata', 'crossed', 'network', {
        policyItem: 'network.egress',
        evidence: [{ source: 'outside', witness: 'decoy', where: 'decoy:metadata', detail: PWN }],
        reason: `reason ${PWN}`,
      }),
      sec('res-fork', 'inconclusive', 'resources', { policyItem: 'resources.processes' }),
    ],
    [taskResult('task-csv', 'unexpected')],
    { enforces: ['network.egress', 'files.hostRead', 'resources.processes', 'identity.nonRoot'], label: 'hard|ened' },
  );
  return [
    process,
    bwrap,
    {
      kind: 'unavailable',
      source: '/out/runs/gvisor',
      backend: 'gvisor',
      reason: 'BACKEND_UNAVAILABLE: runsc is not installed',
      install: 'apt-get install -y docker.io runsc',
    },
  ];
}
