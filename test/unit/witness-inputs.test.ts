/**
 * `sandcheck witness serve` input safety (issue 37): an existing --state or --listen path is refused before
 * anything starts (exit 3, the path named, its content never printed), and the token counts only as
 * `Authorization: Bearer <token>`.
 */
import { existsSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandcheckError } from '../../core/errors.js';
import { packageRoot } from '../../core/paths.js';
import { bearerAuthorized, serveWitness, witnessRequestListener, type WitnessApi } from '../../lab/witness/server.js';
import { WITNESS_PROTOCOL_VERSION } from '../../lab/witness/protocol.js';

const made: string[] = [];
const savedOwnershipDir = process.env['SANDCHECK_OWNERSHIP_DIR'];
afterAll(async () => {
  if (savedOwnershipDir === undefined) delete process.env['SANDCHECK_OWNERSHIP_DIR'];
  else process.env['SANDCHECK_OWNERSHIP_DIR'] = savedOwnershipDir;
  await Promise.all(made.map((d) => rm(d, { recursive: true, force: true })));
});
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'sandcheck-test-witness-inputs-'));
  made.push(d);
  return d;
}

const CANARY = 'SCNRYWITNESSSTATE0123456789';

async function refusal(options: Parameters<typeof serveWitness>[0]): Promise<SandcheckError> {
  const err = await serveWitness(options).then(
    async (served) => {
      await served.close();
      return new Error('the witness started');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SandcheckError);
  return err as SandcheckError;
}

describe('witness serve: an existing state or socket path is refused before anything starts', () => {
  it('an existing 0644 state file, a symlink (dangling or to a file) and an existing --listen path: USAGE, untouched, no journal', async () => {
    const dir = await tempDir();
    const owners = join(dir, 'owners');
    process.env['SANDCHECK_OWNERSHIP_DIR'] = owners;
    const existing = join(dir, 'state.json');
    writeFileSync(existing, `${CANARY}\n`);
    chmodSync(existing, 0o644);
    const before = statSync(existing);

    const err = await refusal({ stateFile: existing });
    expect(err.code).toBe('USAGE');
    expect(err.isUsage).toBe(true);
    expect(err.message).toContain(existing);
    expect(err.message).toMatch(/remove it or choose another path/);
    expect(err.format()).not.toContain(CANARY);
    const after = statSync(existing);
    expect(readFileSync(existing, 'utf8')).toBe(`${CANARY}\n`);
    expect([after.mode & 0o777, after.ino, after.mtimeMs]).toEqual([0o644, before.ino, before.mtimeMs]);

    // A symlink is never followed: not to create its target, not to write into what it points at.
    const target = join(dir, 'elsewhere.json');
    symlinkSync(target, join(dir, 'dangling.json'));
    expect((await refusal({ stateFile: join(dir, 'dangling.json') })).message).toMatch(/already exists \(a symlink\)/);
    expect(existsSync(target)).toBe(false);
    symlinkSync(existing, join(dir, 'link.json'));
    expect((await refusal({ stateFile: join(dir, 'link.json') })).code).toBe('USAGE');
    expect(readFileSync(existing, 'utf8')).toBe(`${CANARY}\n`);

    // Today's --listen removed whatever was at its path first: now it is refused the same way.
    const listenErr = await refusal({ listen: `unix:${existing}` });
    expect(listenErr.code).toBe('USAGE');
    expect(listenErr.message).toContain(`--listen unix:${existing} already exists (a file)`);
    expect(readFileSync(existing, 'utf8')).toBe(`${CANARY}\n`);

    // Nothing was created: no journal (so no lab, no temp file), nothing new beside the file.
    expect(existsSync(owners)).toBe(false);
    expect(readdirSync(dir).sort()).toEqual(['dangling.json', 'link.json', 'state.json']);
  });

  it('the CLI exits 3 with the path and what to do, without the file content or a stack trace', async () => {
    const dir = await tempDir();
    const existing = join(dir, 'witness.json');
    writeFileSync(existing, `{"token":"${CANARY}"}\n`, { mode: 0o644 });
    const r = await execa(process.execPath, ['--import', 'tsx', join(packageRoot(), 'cli', 'main.ts'), 'witness', 'serve', '--state', existing], {
      cwd: packageRoot(),
      reject: false,
      all: true,
      env: { SANDCHECK_OWNERSHIP_DIR: join(dir, 'owners') },
    });
    expect(r.exitCode, r.all).toBe(3);
    expect(r.stderr).toContain(`USAGE: --state ${existing} already exists`);
    expect(r.all).not.toContain(CANARY);
    expect(r.all).not.toMatch(/\n\s+at /);
    expect(readdirSync(dir)).toEqual(['witness.json']);
  }, 60_000);
});

describe('witness HTTP API: the token only as Authorization: Bearer', () => {
  const TOKEN = 'a'.repeat(16) + 'b'.repeat(32);
  let server: Server;
  let socketPath = '';
  beforeAll(async () => {
    const dir = await tempDir();
    socketPath = join(dir, 'w.sock');
    const api: WitnessApi = {
      info: () => ({
        protocol: WITNESS_PROTOCOL_VERSION,
        witnessId: 'wtest',
        bootId: 'b',
        netnsPath: '/run/netns/sc-wtest',
        resolvConfPath: '/x',
        canaries: [],
        nowMs: Date.now(),
      }),
      proveWitness: async () => ({ marker: 'm', sentMs: 1, doneMs: 2, ok: true, notes: [] }),
      trafficBetween: async () => ({ events: [], packets: [], witness: { saturated: false, dropped: 0, proofOfLife: true, scope: 'lab', notes: [] } }),
    };
    server = createServer(witnessRequestListener(TOKEN, api));
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const get = (authorization: string | undefined, path = '/v1/info'): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const req = request({ socketPath, path, method: 'GET', headers: authorization === undefined ? {} : { authorization } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      });
      req.on('error', reject);
      req.end();
    });

  it('a bare token, another scheme, a wrong or padded token and no header are 401; Bearer <token> is 200', async () => {
    expect((await get(TOKEN)).status).toBe(401);
    expect((await get(undefined)).status).toBe(401);
    expect((await get(`Basic ${TOKEN}`)).status).toBe(401);
    expect((await get(`Bearer ${TOKEN.slice(1)}x`)).status).toBe(401);
    expect((await get(`Bearer ${TOKEN} extra`)).status).toBe(401);
    expect((await get(`Bearer  ${TOKEN}`)).status).toBe(401);
    expect((await get(`Bearer${TOKEN}`)).status).toBe(401);
    expect((await get(`xBearer ${TOKEN}`)).status).toBe(401);
    const refused = await get(TOKEN, '/v1/traffic?from=0&to=1');
    expect(refused.status).toBe(401);
    expect(refused.body).toMatch(/Authorization: Bearer/);
    expect(refused.body).not.toContain(TOKEN);

    const ok = await get(`Bearer ${TOKEN}`);
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({ witnessId: 'wtest' });
    // The scheme name is case-insensitive in HTTP (RFC 7235); the token is not.
    expect((await get(`bearer ${TOKEN}`)).status).toBe(200);
    expect((await get(`Bearer ${TOKEN.toUpperCase()}`)).status).toBe(401);
  });

  it('bearerAuthorized compares the whole token', () => {
    expect(bearerAuthorized(`Bearer ${TOKEN}`, TOKEN)).toBe(true);
    expect(bearerAuthorized(TOKEN, TOKEN)).toBe(false);
    expect(bearerAuthorized(`Bearer ${TOKEN}${TOKEN}`, TOKEN)).toBe(false);
    expect(bearerAuthorized('Bearer ', TOKEN)).toBe(false);
    expect(bearerAuthorized(undefined, TOKEN)).toBe(false);
  });
});
