// Apart from policy.ts so that a probe or a backend reading it does not load zod with the suite.

/** A files.denyRead glob as a regular expression over a workspace-relative path. */
function globRegExp(glob: string): RegExp {
  const parts = glob.split('/').map((c) =>
    c === '**'
      ? '(?:[^/]+/)*'
      : `${c
          .split('')
          .map((ch) => (ch === '*' ? '[^/]*' : ch === '?' ? '[^/]' : ch.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
          .join('')}/`,
  );
  // Each part ends in '/'; the whole pattern matches the path with a '/' appended.
  const body = parts.join('');
  return new RegExp(`^${glob.includes('/') ? '' : '(?:[^/]+/)*'}${body}$`);
}

/**
 * Whether a workspace-relative path matches a files.denyRead glob: `*` and `?` within one component, `**` any
 * number of components; a glob without `/` matches a name at any depth (`.env`, `*.pem`, `id_*`).
 */
export function denyReadMatches(glob: string, path: string): boolean {
  return globRegExp(glob).test(`${path}/`);
}

/** Whether the path or one of its parent directories matches a glob of the list (a denied directory denies what is in it). */
export function deniedToRead(globs: readonly string[], path: string): boolean {
  const parts = path.split('/');
  return parts.some((_, i) => {
    const prefix = parts.slice(0, i + 1).join('/');
    return globs.some((g) => denyReadMatches(g, prefix));
  });
}

/** What the read-denied-path probe tries when the policy names no deny-list (it runs then only where claimed anyway, or on the control). */
export const DEFAULT_DENY_READ: readonly string[] = ['.env', '*.pem', 'id_*'];
