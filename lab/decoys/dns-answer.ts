import * as dnsPacket from 'dns-packet';
import { isIPv4, isIPv6 } from 'node:net';

/**
 * What the decoy resolver answers, as a pure function from query bytes to response
 * bytes. Every A/AAAA name resolves (so `anything.example` leads to the canary host);
 * overrides pin names such as `metadata.google.internal`.
 */

export interface DnsRecordOverride {
  a?: string;
  aaaa?: string;
}

export interface DnsAnswers {
  a: string;
  aaaa: string;
  /**
   * Exact names (case-insensitive, trailing dot optional). An override replaces the
   * defaults for that name: a missing `a` or `aaaa` means no record of that type.
   */
  overrides?: Readonly<Record<string, DnsRecordOverride>>;
}

export interface DnsQuestionSeen {
  name: string;
  type: string;
  class: string;
}

export type DnsQueryOutcome =
  | {
      kind: 'answered';
      id: number;
      questions: DnsQuestionSeen[];
      answers: string[];
      rcode: 'NOERROR' | 'FORMERR' | 'NOTIMP' | 'SERVFAIL';
      response: Buffer;
    }
  /** Not a query (the QR bit is set): logged, not answered. */
  | { kind: 'ignored'; reason: string; questions: DnsQuestionSeen[] }
  | { kind: 'malformed'; error: string };

const TTL_SECONDS = 1; // short so that repeated lookups reach the decoy again
const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NOTIMP: 4 } as const;
const OPCODE_QUERY = 0;

export function normaliseDnsName(name: string): string {
  return name.toLowerCase().replace(/\.+$/, '');
}

export function answerDnsQuery(query: Buffer, answers: DnsAnswers): DnsQueryOutcome {
  let decoded: dnsPacket.DecodedPacket;
  try {
    decoded = dnsPacket.decode(query);
  } catch (error) {
    return { kind: 'malformed', error: error instanceof Error ? error.message : String(error) };
  }
  const questions: DnsQuestionSeen[] = (decoded.questions ?? []).map((q) => ({
    name: q.name,
    type: q.type,
    class: q.class ?? 'IN',
  }));
  if (decoded.flag_qr) return { kind: 'ignored', reason: 'not a query (QR bit set)', questions };

  const id = decoded.id ?? 0;
  const opcode = ((query[2] ?? 0) >> 3) & 0xf;
  const rd = decoded.flag_rd ? dnsPacket.RECURSION_DESIRED : 0;
  const flags = dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.RECURSION_AVAILABLE | rd;

  let rcode: keyof typeof RCODE = 'NOERROR';
  const records: dnsPacket.StringAnswer[] = [];
  if (opcode !== OPCODE_QUERY) rcode = 'NOTIMP';
  else if (questions.length === 0) rcode = 'FORMERR';
  else for (const q of decoded.questions ?? []) records.push(...recordsFor(q, answers));

  const packet: dnsPacket.Packet = {
    type: 'response',
    id,
    flags: flags | (opcode << 11) | RCODE[rcode],
    questions: opcode === OPCODE_QUERY ? (decoded.questions ?? []) : [],
    answers: records,
  };
  try {
    return {
      kind: 'answered',
      id,
      questions,
      answers: records.map((r) => r.data),
      rcode,
      response: dnsPacket.encode(packet),
    };
  } catch {
    // A name that decodes but does not re-encode: answer SERVFAIL with the bare header.
    const response = dnsPacket.encode({ type: 'response', id, flags: flags | RCODE.SERVFAIL, questions: [] });
    return { kind: 'answered', id, questions, answers: [], rcode: 'SERVFAIL', response };
  }
}

function recordsFor(q: dnsPacket.Question, answers: DnsAnswers): dnsPacket.StringAnswer[] {
  if ((q.class ?? 'IN') !== 'IN' && q.class !== 'ANY') return [];
  const target = lookup(q.name, answers);
  const out: dnsPacket.StringAnswer[] = [];
  const wantsA = q.type === 'A' || (q.type as string) === 'ANY';
  const wantsAaaa = q.type === 'AAAA' || (q.type as string) === 'ANY';
  if (wantsA && target.a !== undefined) out.push({ type: 'A', name: q.name, ttl: TTL_SECONDS, class: 'IN', data: target.a });
  if (wantsAaaa && target.aaaa !== undefined) {
    out.push({ type: 'AAAA', name: q.name, ttl: TTL_SECONDS, class: 'IN', data: target.aaaa });
  }
  return out;
}

function lookup(name: string, answers: DnsAnswers): DnsRecordOverride {
  const wanted = normaliseDnsName(name);
  for (const [overrideName, override] of Object.entries(answers.overrides ?? {})) {
    if (normaliseDnsName(overrideName) === wanted) return override;
  }
  return { a: answers.a, aaaa: answers.aaaa };
}

/** Checks addresses up front so a bad config fails at start, not on the first query. */
export function validateDnsAnswers(answers: DnsAnswers): string[] {
  const problems: string[] = [];
  const checkA = (where: string, value: string | undefined): void => {
    if (value !== undefined && !isIPv4(value)) problems.push(`${where}: not an IPv4 address: ${value}`);
  };
  const checkAaaa = (where: string, value: string | undefined): void => {
    if (value !== undefined && !isIPv6(value)) problems.push(`${where}: not an IPv6 address: ${value}`);
  };
  checkA('a', answers.a);
  checkAaaa('aaaa', answers.aaaa);
  for (const [name, override] of Object.entries(answers.overrides ?? {})) {
    checkA(`overrides.${name}.a`, override.a);
    checkAaaa(`overrides.${name}.aaaa`, override.aaaa);
  }
  return problems;
}

/** The IPv4 answer the resolver gives for `name` (for a lab service that resolves in process), if any. */
export function resolveA(name: string, answers: DnsAnswers): string | undefined {
  return lookup(name, answers).a;
}
