import { describe, expect, it } from 'vitest';
import { sandcheck } from '../helpers/cli.js';

describe('sandcheck list shows the ATT&CK and CWE ids of the security probes', () => {
  it('--json: every security row has attack and cwe ids, task rows have none', async () => {
    const res = await sandcheck(['list', '--json']);
    expect(res.exitCode).toBe(0);
    const rows = JSON.parse(res.stdout) as { id: string; kind: string; attack?: string[]; cwe?: string[] }[];
    const security = rows.filter((r) => r.kind === 'security');
    expect(security.length).toBeGreaterThan(40);
    expect(security.filter((r) => !r.attack?.every((a) => /^T\d{4}(\.\d{3})?$/.test(a)) || !r.attack.length || !r.cwe?.length).map((r) => r.id)).toEqual([]);
    expect(rows.find((r) => r.id === 'metadata-ipv4')).toMatchObject({ attack: ['T1552.005'], cwe: ['CWE-918'] });
    expect(rows.filter((r) => r.kind === 'task').every((r) => r.attack === undefined && r.cwe === undefined)).toBe(true);
  });

  it('text: attack and cwe columns', async () => {
    const res = await sandcheck(['list']);
    expect(res.exitCode).toBe(0);
    const lines = res.stdout.split('\n');
    expect(lines[0]).toMatch(/^id\s+kind\s+category\s+policyItem\s+attack\s+cwe\s+title$/);
    expect(lines.find((l) => l.startsWith('metadata-ipv4 '))).toMatch(/\sT1552\.005\s+CWE-918\s/);
    expect(lines.find((l) => l.startsWith('average-correct '))).toMatch(/\s-\s+-\s/);
  });
});
