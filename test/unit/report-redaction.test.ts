import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FakeBackend, fakeMarkers } from '../../backends/fake/fake-backend.js';
import { runSuite } from '../../index.js';
import { secretDecoyEnv } from '../../probes/secret-decoy-env/probe.js';
import { FAST_POLICY } from '../helpers/fake-run.js';

/** A value shaped like an AWS access key id, made up per test run (never a real one). */
const fakeAwsKey = (): string => `AKIA${Array.from(randomBytes(16), (b) => 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'[b % 32]).join('')}`;

describe('reports carry no real-looking credential, and keep the run canaries', () => {
  it('a cloud-credential-shaped value in box output is redacted from JSON and JUnit; a canary that came out stays', async () => {
    const out = await mkdtemp(join(tmpdir(), 'sandcheck-redact-'));
    const key = fakeAwsKey();
    try {
      const backend = new FakeBackend(({ files, ctx }) => {
        const m = fakeMarkers({ files });
        return { stdout: `${m.start}metadata said ${key}\nAWS=${ctx.controllerEnv['AWS_SECRET_ACCESS_KEY']}\n${m.done}` };
      });
      const { security } = await runSuite({ backend, policy: FAST_POLICY, probes: [secretDecoyEnv], outDir: out });
      expect(security.results[0]?.verdict).toBe('crossed');
      const json = await readFile(join(out, 'security.json'), 'utf8');
      const junit = await readFile(join(out, 'security.junit.xml'), 'utf8');
      for (const text of [json, junit]) {
        expect(text).not.toContain(key);
        expect(text).toMatch(/SCNRYSECRET[0-9a-f]{24}/);
      }
      // The base64 captures are redacted too (decoded, redacted, re-encoded).
      const head = Buffer.from(security.results[0]?.observation?.stdout.headBase64 ?? '', 'base64').toString('latin1');
      expect(head).not.toContain(key);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });
});
