import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { policySha256 } from '../../harness/environment-facts.js';
import { validateScorecard } from '../../reports/validate.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';

describe('runs that say what they were', () => {
  it('two labelled runs of one backend under two policies: every card records label, tools, kernel, cgroup mode, policy hash and backend config; compare tells them apart and names the policy field', async () => {
    const root = await tempOut();
    const policy = join(root, 'more-pids.yaml');
    await writeFile(policy, 'extends: ci\nname: more-pids\nresources:\n  processes: 128\n');
    const config = join(root, 'process.yaml');
    await writeFile(config, '# the process control takes no options\n{}\n');
    const base = join(root, 'base');
    const head = join(root, 'head');
    const a = await sandcheck(['run', '--backend', 'process', '--policy', 'ci', '--only', 'identity-uid', '--out', base, '--label', 'base']);
    const b = await sandcheck([
      'run',
      '--backend',
      'process',
      '--policy',
      policy,
      '--only',
      'identity-uid',
      '--out',
      head,
      '--label',
      'head',
      '--backend-config',
      config,
    ]);
    expect(a.exitCode, a.all).toBe(1);
    expect(b.exitCode, b.all).toBe(1);
    const cards = await readCards(head);
    for (const card of [cards.security, cards.task]) expect(validateScorecard(card.scorecard, card).valid).toBe(true);
    const env = cards.security.environment;
    expect(env).toMatchObject({
      label: 'head',
      policySha256: policySha256(cards.security.policy),
      cgroupMode: expect.stringMatching(/^(v1|hybrid|v2|unknown)$/),
    });
    expect(env?.kernel).not.toBe('');
    expect(env?.backendConfig).toMatchObject({ file: 'process.yaml', bytes: (await readFile(config)).length, options: {}, checkedBy: 'sandcheck' });
    expect(env?.tools.find((t) => t.tool === 'python3')).toMatchObject({ status: 'ok' });
    expect(cards.task.environment).toEqual(env);
    expect((await readCards(base)).security.environment?.policySha256).not.toBe(env?.policySha256);

    const cmp = await sandcheck(['compare', base, head, '--markdown', join(root, 'cmp.md')]);
    expect(cmp.exitCode, cmp.all).toBe(0);
    expect(cmp.stdout).toMatch(/probe\s+process \[base\]\s+process \[head\]/);
    expect(cmp.stdout).toContain('policy differs in 2 field(s): name, resources.processes');
    expect(await readFile(join(root, 'cmp.md'), 'utf8')).toMatch(/\| resources\.processes \| `64` \| `128` \|/);
  }, 120_000);
});
