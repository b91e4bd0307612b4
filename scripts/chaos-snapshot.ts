import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultJournalDir, parseJournal } from '../core/ownership-journal.js';
import { listKeys } from '../lab/keyring.js';

/** Everything on the host that names the run: the snapshot half of the leak check. */
export function hostLeftovers(runId: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8');
      if (cmd.includes(runId) || env.split('\0').includes(`SANDCHECK_RUN=${runId}`)) found.push(`process ${pid}: ${cmd.replaceAll('\0', ' ').slice(0, 120)}`);
    } catch {
      // gone, or not readable
    }
  }
  const netns = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout ?? '';
  if (netns.split('\n').some((l) => l.split(' ')[0] === `sc-${runId}`)) found.push(`netns sc-${runId}`);
  const walk = (dir: string, depth: number): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const p = join(dir, e.name);
      if (e.name.includes(runId)) found.push(`cgroup ${p}`);
      else if (depth > 0) walk(p, depth - 1);
    }
  };
  walk('/sys/fs/cgroup', 3);
  for (const k of listKeys(`sandcheck-decoy:${runId}:`)) found.push(`key ${k.description}`);
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) if (line.includes(runId)) found.push(`mount ${line.split(' ')[4]}`);
  for (const [dir, prefix] of [
    [tmpdir(), `sandcheck-${runId}`],
    ['/run/sandcheck/bwrap', runId],
    ['/run/sandcheck/labs', `sc-${runId}`],
    ['/var/lib/sandcheck/lab-docker', runId],
  ] as const) {
    for (const name of existsSync(dir) ? readdirSync(dir) : []) if (name.startsWith(prefix)) found.push(`path ${join(dir, name)}`);
  }
  return found;
}

/** The ownership-journal half: a journal of the run that still lists live resources. */
export function journalLeftovers(runId: string): string[] {
  const path = join(defaultJournalDir(), `${runId}.jsonl`);
  if (!existsSync(path)) return [];
  const entry = parseJournal(path, readFileSync(path, 'utf8'));
  return [`journal ${path}`, ...(entry?.live ?? []).map((r) => `journal lists ${JSON.stringify(r)}`)];
}
