/**
 * `sandcheck witness serve` for boxes whose network is elsewhere (boxNetwork: remote): the network
 * probes are judged from the witness's records — held behind the box's network control, crossed without
 * it — and without a witness they are not-applicable, never held. A witness that goes away mid-run
 * leaves its windows blind (inconclusive), and stopping it leaves nothing behind.
 */
import { existsSync, lstatSync, readdirSync, statSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa, type ResultPromise } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { connectWitness } from '../../lab/witness/client.js';
import { serveWitness } from '../../lab/witness/server.js';
import { probeLabSupport } from '../../lab/netns/support.js';
import { witnessBlindness } from '../../lab/witness-health.js';
import { SandcheckError } from '../../core/errors.js';
import { defaultJournalDir } from '../../core/ownership-journal.js';
import { sweepDeadRuns } from '../../harness/ownership/sweep.js';
import { packageRoot } from '../../core/paths.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';
import { CLI, readCards, sandcheck, tempOut } from '../helpers/cli.js';

const ADAPTER = `rpc:python3 ${join(packageRoot(), 'examples', 'rpc-python', 'sandcheck_bwrap_adapter.py')}`;
const NETWORK = ['metadata-ipv4', 'public-egress-ipv4', 'dns-exfil'];
const lab = await probeLabSupport();
const skip = lab.available ? await bwrapSkipReason() : lab.reason;

/** The CLI from source (as `npm run dev` runs it), so these checks need no build. */
function sandcheckFromSource(args: readonly string[], env: Record<string, string>): ResultPromise<{ reject: false; all: true }> {
  return execa(process.execPath, ['--import', 'tsx', join(packageRoot(), 'cli', 'main.ts'), ...args], { reject: false, all: true, cwd: packageRoot(), env });
}

function getStatus(socketPath: string, authorization: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: '/v1/info', headers: { authorization } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

const stops: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const s of stops.splice(0)) await s();
});

describe.skipIf(skip !== undefined)('sandcheck witness serve', () => {
  it('judges a remote box: held behind its network control, crossed without it, not-applicable with no witness; stops clean', async () => {
    const out = await tempOut();
    const state = join(out, 'witness.json');
    const serve = execa(process.execPath, [CLI, 'witness', 'serve', '--state', state], { reject: false, all: true });
    stops.push(async () => serve.kill('SIGKILL'));
    for (let i = 0; i < 150 && !existsSync(state); i++) await sleep(100);
    expect(existsSync(state), 'the witness wrote its state file').toBe(true);
    const { witnessId } = JSON.parse(await readFile(state, 'utf8')) as { witnessId: string };
    const netns = `/run/netns/sc-${witnessId}`;
    expect(existsSync(netns)).toBe(true);

    // The adapter's boxes join the witness's namespace, as boxes on another machine would be routed to it.
    const remote = join(out, 'remote.json');
    await writeFile(remote, JSON.stringify({ netns }));
    const weak = join(out, 'weak.json');
    await writeFile(weak, JSON.stringify({ netns, shareNetwork: true, claims: ['network.egress', 'identity.hostCredentials'] }));

    const held = await tempOut();
    const r1 = await sandcheck([
      'run',
      '--backend',
      ADAPTER,
      '--backend-config',
      remote,
      '--witness',
      state,
      '--policy',
      'ci',
      '--out',
      held,
      '--only',
      ...NETWORK,
    ]);
    const c1 = (await readCards(held)).security;
    expect(
      c1.results.map((x) => x.verdict),
      r1.all,
    ).toEqual(NETWORK.map(() => 'held'));
    expect(c1.run.network).toMatch(new RegExp(`witness ${witnessId} .*sandcheck witness serve`));
    for (const x of c1.results) expect(x.evidence.some((e) => e.witness === 'witness-health' && /proof of life true, scope remote/.test(e.detail))).toBe(true);

    const crossed = await tempOut();
    const r2 = await sandcheck([
      'run',
      '--backend',
      ADAPTER,
      '--backend-config',
      weak,
      '--witness',
      state,
      '--policy',
      'ci',
      '--out',
      crossed,
      '--only',
      ...NETWORK,
    ]);
    const c2 = (await readCards(crossed)).security;
    expect(
      c2.results.map((x) => x.verdict),
      r2.all,
    ).toEqual(NETWORK.map(() => 'crossed'));
    for (const x of c2.results) expect(x.evidence.some((e) => e.source === 'outside' && /^(decoy:|packet-witness)/.test(e.witness))).toBe(true);

    const blind = await tempOut();
    const r3 = await sandcheck(['run', '--backend', ADAPTER, '--backend-config', weak, '--policy', 'ci', '--out', blind, '--only', ...NETWORK]);
    const c3 = (await readCards(blind)).security;
    expect(
      c3.results.map((x) => x.verdict),
      r3.all,
    ).toEqual(NETWORK.map(() => 'not-applicable'));
    expect(c3.results[0]?.reason).toMatch(/boxNetwork: remote.*sandcheck witness serve/);

    serve.kill('SIGTERM');
    const done = await serve;
    expect(done.exitCode, done.all).toBe(0);
    expect(existsSync(netns)).toBe(false);
    expect(existsSync(state)).toBe(false);
  }, 300_000);
});

describe.skipIf(!lab.available)('a SIGKILLed witness', () => {
  it.each([
    ['at a --listen path the user chose (ours by inode)', true],
    ['at its default socket path (ours by name and inode)', false],
  ])(
    'leaves its socket and state file journalled %s: `clean --dry-run` lists them, `clean` removes them',
    async (_, userPath) => {
      const dir = await tempOut();
      const owners = join(dir, 'owners');
      const state = join(dir, 'witness.json');
      const env = { SANDCHECK_OWNERSHIP_DIR: owners };
      const listen = userPath ? ['--listen', `unix:${join(dir, 'listen.sock')}`] : [];
      const serve = sandcheckFromSource(['witness', 'serve', ...listen, '--state', state], env);
      // Should an expectation fail half way: kill it and sweep its private journal (what this witness owned, nothing else).
      stops.push(
        async () => serve.kill('SIGKILL'),
        () => sweepDeadRuns({ dir: owners }),
      );
      for (let i = 0; i < 300 && !existsSync(state) && serve.exitCode === null; i++) await sleep(100);
      expect(existsSync(state), 'the witness wrote its state file').toBe(true);
      expect(statSync(state).mode & 0o777).toBe(0o600);
      const { witnessId, token, url } = JSON.parse(await readFile(state, 'utf8')) as { witnessId: string; token: string; url: string };
      const socket = url.replace(/^unix:/, '');
      expect(socket).toBe(userPath ? join(dir, 'listen.sock') : `/run/sandcheck/witness-${witnessId}.sock`);
      expect(await getStatus(socket, token)).toBe(401);
      expect(await getStatus(socket, `Bearer ${token}`)).toBe(200);

      serve.kill('SIGKILL');
      await serve;
      expect(lstatSync(socket).isSocket()).toBe(true);
      expect(existsSync(state)).toBe(true);
      expect(readdirSync(owners)).toEqual([`${witnessId}.jsonl`]);

      const dry = await sandcheckFromSource(['clean', '--dry-run'], env);
      expect(dry.exitCode, dry.all).toBe(0);
      expect(dry.stdout).toContain(`would remove: ${witnessId}: socket ${socket}`);
      expect(dry.stdout).toContain(`would remove: ${witnessId}: file ${state}`);
      expect(dry.stdout).not.toContain(token);
      expect(lstatSync(socket).isSocket() && existsSync(state)).toBe(true);
      expect(readdirSync(owners)).toEqual([`${witnessId}.jsonl`]);

      const clean = await sandcheckFromSource(['clean'], env);
      expect(clean.exitCode, clean.all).toBe(0);
      expect(clean.stdout).toContain(`removed: ${witnessId}: socket ${socket}`);
      expect(clean.stdout).toContain(`removed: ${witnessId}: file ${state}`);
      expect(existsSync(socket) || existsSync(state)).toBe(false);
      // Its lab goes too (by this journal, or by another run's start sweep first).
      expect(existsSync(`/run/netns/sc-${witnessId}`)).toBe(false);
      expect(readdirSync(owners)).toEqual([]);
      expect(readdirSync(dir).sort()).toEqual(['owners']);
    },
    120_000,
  );
});

describe.skipIf(!lab.available)('a witness stopped at once', () => {
  it('a SIGTERM the moment its state file appears still stops it clean: exit 0, no state file, socket, namespace or journal left', async () => {
    const dir = await tempOut();
    const owners = join(dir, 'owners');
    const state = join(dir, 'witness.json');
    const serve = sandcheckFromSource(['witness', 'serve', '--state', state], { SANDCHECK_OWNERSHIP_DIR: owners });
    stops.push(
      async () => serve.kill('SIGKILL'),
      () => sweepDeadRuns({ dir: owners }),
    );
    for (let i = 0; i < 1500 && !existsSync(state) && serve.exitCode === null; i++) await sleep(20);
    const { witnessId, url } = JSON.parse(await readFile(state, 'utf8')) as { witnessId: string; url: string };
    serve.kill('SIGTERM');
    const done = await serve;
    expect(done.exitCode, done.all).toBe(0);
    expect(existsSync(state) || existsSync(url.replace(/^unix:/, '')) || existsSync(`/run/netns/sc-${witnessId}`)).toBe(false);
    expect(readdirSync(owners)).toEqual([]);
  }, 120_000);
});

describe.skipIf(!lab.available)('witness client', () => {
  it('a wrong token is refused before anything runs; a witness gone mid-run leaves its windows blind, never quiet', async () => {
    const served = await serveWitness({});
    stops.push(() => served.close());
    const err = await connectWitness(served.state.url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandcheckError);
    expect((err as SandcheckError).message).toMatch(/SANDCHECK_WITNESS_TOKEN/);
    process.env['SANDCHECK_WITNESS_TOKEN'] = 'x'.repeat(48);
    const refused = await connectWitness(served.state.url).catch((e: unknown) => e);
    expect((refused as SandcheckError).code).toBe('USAGE');
    expect((refused as SandcheckError).message).toMatch(/bearer token/);
    process.env['SANDCHECK_WITNESS_TOKEN'] = served.state.token;
    const witness = await connectWitness(served.state.url);
    delete process.env['SANDCHECK_WITNESS_TOKEN'];
    expect(witness.handle?.netnsPath).toBe(`/run/netns/sc-${served.state.witnessId}`);
    expect(witness.canaries.length).toBeGreaterThan(0);

    const from = Date.now();
    expect((await witness.proveWitness()).ok).toBe(true);
    const seen = await witness.trafficBetween(from, Date.now());
    expect(witnessBlindness(seen.witness)).toBeUndefined();
    expect(seen.witness.scope).toBe('remote');

    await served.close();
    expect(existsSync(served.state.url.replace(/^unix:/, ''))).toBe(false);
    expect(existsSync(join(defaultJournalDir(), `${served.state.witnessId}.jsonl`)), 'its journal is closed').toBe(false);
    const later = Date.now();
    const proof = await witness.proveWitness();
    expect(proof.ok).toBe(false);
    const gone = await witness.trafficBetween(later, Date.now());
    expect(witnessBlindness(gone.witness)).toMatch(/no proof of life/);
    expect(gone.witness.notes.join(' ')).toMatch(/unreachable/);
  }, 60_000);
});
