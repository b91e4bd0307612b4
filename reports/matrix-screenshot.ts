import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execa } from 'execa';
import { findBinary } from '../core/find-binary.js';

/**
 * Renders a matrix.html in headless Debian chromium: a PNG screenshot (`sandcheck matrix --png FILE`,
 * `scripts/matrix-screenshot.ts`) or the DOM after parsing (`--dump-dom`, for the browser tests).
 * Needs `apt-get install -y --no-install-recommends chromium`.
 */

export const CHROMIUM_INSTALL = 'apt-get install -y --no-install-recommends chromium';
const CHROMIUM_NAMES = ['chromium', 'chromium-browser', 'google-chrome'];
const TIMEOUT_MS = 60_000;

export async function findChromium(): Promise<string | undefined> {
  for (const name of CHROMIUM_NAMES) {
    const found = await findBinary(name);
    if (found) return found;
  }
  return undefined;
}

/** Processes of this one chromium (its private profile directory is in their argv): only what we started. */
function profileProcesses(profile: string): number[] {
  const pids: number[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(profile)) pids.push(Number(pid));
    } catch {
      // gone
    }
  }
  return pids;
}

/** One headless chromium with a private profile that is removed afterwards, with every process it left. */
async function withChromium(args: readonly string[]): Promise<string> {
  const chromium = await findChromium();
  if (!chromium) throw new Error(`chromium is not installed: ${CHROMIUM_INSTALL}`);
  const profile = await mkdtemp(join(tmpdir(), 'sandcheck-chromium-'));
  try {
    const r = await execa(
      chromium,
      ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--no-first-run', `--user-data-dir=${profile}`, ...args],
      {
        reject: false,
        timeout: TIMEOUT_MS,
        forceKillAfterDelay: 2000,
        env: { HOME: profile },
        extendEnv: true,
      },
    );
    if (r.exitCode !== 0) throw new Error(`chromium exited ${r.exitCode ?? r.signal ?? '?'}: ${r.stderr.slice(-2000)}`);
    return r.stdout;
  } finally {
    for (const pid of profileProcesses(profile)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await rm(profile, { recursive: true, force: true });
  }
}

export async function screenshot(
  htmlFile: string,
  pngFile: string,
  size: { width: number; height: number } = { width: 1400, height: 1000 },
): Promise<{ bytes: number }> {
  await withChromium([`--screenshot=${resolve(pngFile)}`, `--window-size=${size.width},${size.height}`, pathToFileURL(resolve(htmlFile)).href]);
  return { bytes: (await stat(pngFile)).size };
}

/** The document as chromium parsed it (what a reader's browser builds from the file). */
export async function dumpDom(htmlFile: string): Promise<string> {
  return withChromium(['--dump-dom', pathToFileURL(resolve(htmlFile)).href]);
}

export function parseSize(text: string | undefined): { width: number; height: number } | undefined {
  if (text === undefined) return undefined;
  const m = /^(\d{2,5})[x,](\d{2,5})$/.exec(text);
  if (!m) throw new Error(`${text}: expected WIDTHxHEIGHT, e.g. 1400x1000`);
  return { width: Number(m[1]), height: Number(m[2]) };
}
