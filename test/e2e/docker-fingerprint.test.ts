/**
 * A docker-hardened run with --certify: the cards and the sign-off fingerprint name the image the run's own
 * daemon ran (its content digest, as the daemon reports it) and that daemon's version and Engine API version.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EnvironmentFingerprintSchema } from '../../harness/environment-fingerprint.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';
import { dockerLabSkipReason } from '../helpers/docker.js';

const SKIP = await dockerLabSkipReason();

describe.skipIf(SKIP !== undefined)('docker-hardened: the image digest and the daemon in the cards and the fingerprint', () => {
  it('records the image ID and "dockerd <version> (API <version>)" of the run\'s private daemon', async () => {
    const root = await tempOut();
    const out = join(root, 'out');
    const bundle = join(root, 'bundle');
    const res = await sandcheck([
      'run',
      '--backend',
      'docker-hardened',
      '--policy',
      'ci',
      '--only',
      'identity-uid',
      'average-correct',
      '--out',
      out,
      '--certify',
      bundle,
    ]);
    expect(res.exitCode, res.all).toBe(0);
    const { security, task } = await readCards(out);
    for (const card of [security, task]) {
      const facts = new Map((card.environment?.backendFacts ?? []).map((f) => [f.name, f.value]));
      expect(facts.get('image digest')).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(facts.get('image')).toMatch(/^sandcheck-/);
      expect(facts.get('daemon')).toMatch(/^dockerd \d+\.\d+\S* \(API 1\.\d+\)$/);
      expect(facts.get('daemon mode')).toMatch(/^private/);
    }
    const fingerprint = EnvironmentFingerprintSchema.parse(JSON.parse(await readFile(join(bundle, 'environment.json'), 'utf8')));
    const digest = security.environment?.backendFacts?.find((f) => f.name === 'image digest')?.value;
    expect(fingerprint.backend.image?.digest).toBe(digest);
    expect(fingerprint.backend.version).toMatch(/^dockerd \d/);
    expect((await sandcheck(['verify', bundle])).exitCode).toBe(0);
  }, 240_000);
});
