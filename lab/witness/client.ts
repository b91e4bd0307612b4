import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { z } from 'zod';
import type { LabHandle } from '../../model/backend-contract.js';
import { SandcheckError, errorMessage } from '../../core/errors.js';
import { CONFIG_FILE_MAX_BYTES, readBoundedText } from '../../core/bounded-file.js';
import { formatIssues } from '../../core/config-issues.js';
import { visibleLine } from '../../core/clean-text.js';
import { readBootIdSync } from '../../core/ownership-journal.js';
import type { LabTraffic } from '../lab-session.js';
import type { WitnessProof } from '../witness-ledger.js';
import { MAX_RESPONSE_BYTES, TrafficSchema, WitnessInfoSchema, WitnessProofSchema, WitnessStateSchema, type WitnessInfo } from './protocol.js';

const CALL_MS = 30_000;

/** A `sandcheck witness serve` seen from a run: the run's lab, with its records fetched over HTTP. */
export interface RemoteWitness {
  url: string;
  info: WitnessInfo;
  /** The witness's lab namespace, when the witness runs on this very machine (same boot id, path present). */
  handle?: LabHandle;
  /** Witness clock minus ours (ms): 0 on this machine (one clock), else estimated when connecting. */
  offsetMs: number;
  /** How far the estimate may be off (half the round trip it was measured over); windows are widened by it. */
  uncertaintyMs: number;
  canaries: { label: string; value: string }[];
  proveWitness(): Promise<WitnessProof>;
  /** Without `toMs`: until the witness's decoys logged what reached them before it answered. */
  trafficBetween(fromMs: number, toMs?: number): Promise<LabTraffic>;
}

interface Endpoint {
  url: string;
  token: string;
}

/** `--witness FILE` (the state file `witness serve --state` wrote) or `--witness URL` with SANDCHECK_WITNESS_TOKEN. */
export async function witnessEndpoint(spec: string, env: NodeJS.ProcessEnv = process.env): Promise<Endpoint> {
  if (spec.startsWith('unix:') || spec.startsWith('http://')) {
    const token = env['SANDCHECK_WITNESS_TOKEN'];
    if (!token)
      throw new SandcheckError(
        'USAGE',
        `--witness ${spec}: set SANDCHECK_WITNESS_TOKEN to the witness's token, or pass the state file it wrote (witness serve --state FILE)`,
      );
    return { url: spec, token };
  }
  const read = await readBoundedText(spec, CONFIG_FILE_MAX_BYTES);
  if (!read.ok) {
    throw new SandcheckError(
      'USAGE',
      `--witness ${visibleLine(spec)}: not a witness URL (unix:/path or http://host:port), and as a state file it ${read.message}`,
      { hint: 'start one with: sandcheck witness serve --state /run/sandcheck/witness.json' },
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(read.text);
  } catch {
    // The parser's message quotes the text: a state file holds a token, and this may not be one at all.
    throw new SandcheckError('CONFIG_INVALID', `--witness ${visibleLine(spec)}: not a witness state file (not valid JSON)`, {
      hint: 'pass the file `sandcheck witness serve --state FILE` wrote',
    });
  }
  const parsed = WitnessStateSchema.safeParse(raw);
  if (!parsed.success) throw new SandcheckError('CONFIG_INVALID', `${visibleLine(spec)}: not a witness state file\n${formatIssues(parsed.error, raw, spec)}`);
  return { url: parsed.data.url, token: parsed.data.token };
}

function call<T extends z.ZodType>(ep: Endpoint, method: 'GET' | 'POST', path: string, schema: T): Promise<z.infer<T>> {
  const target = ep.url.startsWith('unix:') ? { socketPath: ep.url.slice('unix:'.length), path } : { ...splitHttp(ep.url), path };
  return new Promise((resolve, reject) => {
    const req = request({ ...target, method, headers: { authorization: `Bearer ${ep.token}` }, timeout: CALL_MS }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_RESPONSE_BYTES) req.destroy(new Error(`the answer exceeded ${MAX_RESPONSE_BYTES} bytes`));
        else chunks.push(c);
      });
      res.on('end', () => {
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          return reject(new SandcheckError('WITNESS_FAILED', `the witness at ${ep.url} answered ${path} with something that is not JSON`));
        }
        if (res.statusCode !== 200) {
          const msg = typeof body === 'object' && body !== null && 'error' in body ? String(body.error) : `status ${res.statusCode}`;
          return reject(new SandcheckError('WITNESS_FAILED', `the witness at ${ep.url} refused ${path}: ${msg}`));
        }
        const parsed = schema.safeParse(body);
        if (!parsed.success)
          return reject(new SandcheckError('WITNESS_FAILED', `the witness at ${ep.url} answered ${path} off its protocol:\n${z.prettifyError(parsed.error)}`));
        resolve(parsed.data as z.infer<T>);
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${CALL_MS} ms`)));
    req.on('error', (err) =>
      reject(err instanceof SandcheckError ? err : new SandcheckError('WITNESS_FAILED', `the witness at ${ep.url} is unreachable (${path}): ${err.message}`)),
    );
    req.end();
  });
}

function splitHttp(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 80) };
}

/**
 * Connects a run to a witness: reads its description and estimates the clock offset (so the run's
 * windows, in our clock, are asked for in the witness's). A witness that cannot be reached is a usage
 * error before anything runs.
 */
export async function connectWitness(spec: string): Promise<RemoteWitness> {
  const ep = await witnessEndpoint(spec);
  const t0 = Date.now();
  let info: WitnessInfo;
  try {
    info = await call(ep, 'GET', '/v1/info', WitnessInfoSchema);
  } catch (err) {
    throw new SandcheckError('USAGE', `no witness answers at ${ep.url}: ${errorMessage(err)}`, {
      hint: 'is `sandcheck witness serve` running there, and is the token the one it wrote?',
    });
  }
  const t1 = Date.now();
  const local = info.bootId === readBootIdSync() && existsSync(info.netnsPath);
  // On this machine both read one clock; an estimate from a slow round trip would only shift the windows.
  const offsetMs = local ? 0 : Math.round(info.nowMs - (t0 + t1) / 2);
  const uncertaintyMs = local ? 0 : Math.ceil((t1 - t0) / 2) + 1;
  return {
    url: ep.url,
    info,
    offsetMs,
    uncertaintyMs,
    ...(local ? { handle: { netnsPath: info.netnsPath, resolvConfPath: info.resolvConfPath } } : {}),
    canaries: info.canaries,
    async proveWitness() {
      try {
        return await call(ep, 'POST', '/v1/prove', WitnessProofSchema);
      } catch (err) {
        const now = Date.now() + offsetMs;
        return { marker: 'remote-witness', sentMs: now, doneMs: now, ok: false, notes: [errorMessage(err)] };
      }
    },
    async trafficBetween(fromMs, toMs) {
      const from = Math.floor(fromMs + offsetMs - uncertaintyMs);
      const to = Math.ceil((toMs ?? Date.now()) + offsetMs + uncertaintyMs);
      try {
        const t = await call(ep, 'GET', `/v1/traffic?from=${from}&to=${to}${toMs === undefined ? '&open=1' : ''}`, TrafficSchema);
        return { ...t, witness: { ...t.witness, scope: 'remote' as const } };
      } catch (err) {
        // A witness that cannot answer saw nothing we can use: blind, never quiet.
        return { events: [], packets: [], witness: { saturated: false, dropped: 0, proofOfLife: false, scope: 'remote' as const, notes: [errorMessage(err)] } };
      }
    },
  };
}
