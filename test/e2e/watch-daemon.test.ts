/**
 * `sandcheck run --watch-daemon` (issue 17): a path that is missing, not a socket or silent is refused
 * before anything runs; a real daemon (a private dockerd in a lab of this test's own) handed to the
 * unsandboxed control makes host-search cross on that daemon's own event log, and the cards say it was watched.
 */
import { randomBytes } from 'node:crypto';
import { link, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SecurityResult } from '../../model/scorecard.js';
import type { RunContext } from '../../harness/run-context.js';
import { readDaemonEvents } from '../../harness/run-context.js';
import type { LabDaemon } from '../../backends/docker/index.js';
import type { LabSession } from '../../lab/lab-session.js';
import { validateScorecard } from '../../reports/validate.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';
import { dockerLabSkipReason } from '../helpers/docker.js';
import { closeDaemonRun, openDaemonRun } from '../helpers/lab-daemon.js';

const exists = (p: string): Promise<boolean> =>
  stat(p).then(
    () => true,
    () => false,
  );

describe('run --watch-daemon refuses what is not a container daemon before anything runs', () => {
  let silent: Server | undefined;
  afterAll(() => silent?.close());

  it('a missing path, a regular file and a socket nobody answers on: WATCH_DAEMON_INVALID, exit 3, no --out written', async () => {
    const root = await tempOut();
    const file = join(root, 'not-a-socket');
    await writeFile(file, 'x');
    const quiet = join(root, 'quiet.sock');
    silent = createServer(() => undefined);
    await new Promise<void>((ok) => silent?.listen(quiet, ok));
    const cases: [string, RegExp][] = [
      [join(root, 'missing.sock'), /cannot stat it \(ENOENT\)/],
      [file, /not a Unix socket/],
      [quiet, /did not answer GET \/_ping/],
    ];
    for (const [path, why] of cases) {
      const out = join(root, `out-${cases.findIndex((c) => c[0] === path)}`);
      const r = await sandcheck(['run', '-b', 'process', '--only', 'host-search', '--watch-daemon', path, '--out', out]);
      expect(r.exitCode, r.all).toBe(3);
      expect(r.stderr).toContain(`sandcheck: WATCH_DAEMON_INVALID: --watch-daemon ${path}`);
      expect(r.stderr).toMatch(why);
      expect(r.stderr).toContain('hint:');
      expect(await exists(out)).toBe(false);
    }
  }, 60_000);
});

const SKIP = await dockerLabSkipReason();
const runId = `rwd${randomBytes(4).toString('hex')}`;

describe.skipIf(SKIP !== undefined)('run --watch-daemon with a real daemon the box can reach', () => {
  let lab: LabSession | undefined;
  let run: RunContext | undefined;
  let daemon: LabDaemon | undefined;

  beforeAll(async () => {
    ({ lab, run, daemon } = await openDaemonRun(runId));
  }, 60_000);

  afterAll(async () => {
    expect(await closeDaemonRun({ lab, run, daemon })).toEqual([]);
  }, 60_000);

  it('host-search on the process control: crossed on the daemon-event-log naming its volume with the flag, no such evidence without it', async () => {
    if (!daemon) throw new Error('no daemon');
    const root = await tempOut();
    // The box finds the socket where it searches first (/tmp); the daemon itself stays in its own directory and the lab.
    await link(daemon.socketPath, join(root, 'docker.sock'));
    const hostSearch = async (out: string, flags: string[]): Promise<{ r: SecurityResult | undefined; startedMs: number }> => {
      const startedMs = Date.now();
      const got = await sandcheck(['run', '-b', 'process', '--policy', 'ci', '--only', 'host-search', '--out', out, ...flags]);
      expect(got.exitCode, got.all).toBe(1);
      const cards = await readCards(out);
      for (const card of [cards.security, cards.task]) expect(validateScorecard(card.scorecard, card).valid).toBe(true);
      return { r: cards.security.results.find((x) => x.id === 'host-search'), startedMs };
    };

    const watched = join(root, 'watched');
    const { r, startedMs } = await hostSearch(watched, ['--watch-daemon', daemon.socketPath]);
    expect(r?.verdict).toBe('crossed');
    const fromLog = r?.evidence.find((e) => e.source === 'outside' && e.witness === 'daemon-event-log');
    const volume = fromLog?.detail.match(/sandcheck-[0-9a-f]{16}/)?.[0];
    expect(volume, JSON.stringify(r?.evidence)).toBeDefined();
    // The volume the evidence names is one the daemon itself logged (read here, independently of the run).
    const log = await readDaemonEvents(daemon.socketPath, startedMs - 1000, Date.now(), `"${volume}"`);
    expect(log.error).toBeUndefined();
    expect(log.events.some((e) => e.includes('"create"'))).toBe(true);
    expect(log.events.some((e) => e.includes('"destroy"'))).toBe(true);
    const cards = await readCards(watched);
    expect(cards.security.run.watchedDaemons).toEqual([
      { socket: daemon.socketPath, apiVersion: expect.stringMatching(/^\d+\.\d+$/), server: expect.stringMatching(/^Docker\//) },
    ]);
    expect(cards.task.run.watchedDaemons).toEqual(cards.security.run.watchedDaemons);
    expect(await daemon.client.listVolumes(['sandcheck'])).toEqual([]);

    const unwatched = join(root, 'unwatched');
    const without = await hostSearch(unwatched, []);
    expect(without.r?.evidence.filter((e) => e.witness === 'daemon-event-log')).toEqual([]);
    expect((await readCards(unwatched)).security.run.watchedDaemons).toBeUndefined();
  }, 60_000);
});
