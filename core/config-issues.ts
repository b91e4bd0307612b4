import type { z } from 'zod';
import { visibleLine } from './clean-text.js';

type PlainObject = Record<string, unknown>;

function isPlainObject(v: unknown): v is PlainObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A key is named when it looks like one (a typo to fix); anything else is counted, never shown (a file that is not config). */
const NAMEABLE_KEY = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;

function unknownKeys(keys: readonly string[]): string {
  const named = keys.filter((k) => NAMEABLE_KEY.test(k)).slice(0, 10);
  const unnamed = keys.length - named.length;
  const parts = [
    named.length > 0 ? `unknown key${named.length > 1 ? 's' : ''} ${named.map((k) => `"${k}"`).join(', ')}` : '',
    unnamed > 0 ? `${unnamed} ${named.length > 0 ? 'more ' : ''}unknown key${unnamed > 1 ? 's' : ''} that are not names` : '',
  ];
  return `${parts.filter(Boolean).join('; ')}${unnamed > 0 ? ' (is this the right file?)' : ''}`;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const key of path) {
    if (!isPlainObject(cur) && !Array.isArray(cur)) return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

/**
 * What a value is, for a message: numbers and booleans as written, everything else by its kind only. Text is never
 * echoed: the file may not be what its name says (a symlink to a secret), and messages reach CI logs.
 */
export function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'not a number';
    if (!Number.isFinite(v)) return v > 0 ? 'infinite' : '-infinite';
    return String(v);
  }
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'string') return v.length === 0 ? 'an empty string' : `a string of ${v.length} character${v.length === 1 ? '' : 's'}`;
  if (Array.isArray(v)) return `a list of ${v.length}`;
  if (typeof v === 'object') return 'a mapping';
  return typeof v;
}

/** `resources.memoryMb: expected a positive integer, got -1`, one line per issue (at most 20). */
export function formatIssues(error: z.ZodError, input: unknown, source: string): string {
  const lines = error.issues.slice(0, 20).map((issue) => {
    const path = visibleLine(issue.path.map(String).join('.').slice(0, 200)) || '(root)';
    if (issue.code === 'unrecognized_keys') return `${visibleLine(source)}: ${path}: ${unknownKeys(issue.keys)}`;
    // At the top level only the kind: a whole file that is one scalar is not echoed either.
    const value = valueAt(input, issue.path);
    const got = `, got ${issue.path.length === 0 && typeof value !== 'object' ? (typeof value === 'string' ? 'text' : `a ${typeof value}`) : describeValue(value)}`;
    return `${visibleLine(source)}: ${path}: ${visibleLine(issue.message.slice(0, 300))}${got}`;
  });
  if (error.issues.length > 20) lines.push(`${visibleLine(source)}: … and ${error.issues.length - 20} more`);
  return lines.join('\n');
}
