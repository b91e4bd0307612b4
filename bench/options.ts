export const ALL_BACKENDS = ['process', 'bwrap', 'docker-hardened', 'gvisor'] as const;

export interface BenchOptions {
  rounds: number;
  backends: string[];
  verbose: boolean;
}

export const USAGE = `usage: npm run bench -- [--rounds N] [--backends a,b] [--verbose]
  --rounds N      measured rounds per payload and side, after one warm-up round (default 10)
  --backends a,b  which backends (default: ${ALL_BACKENDS.join(',')})
  --verbose       one line per round`;

export function parseOptions(argv: readonly string[]): BenchOptions | { error: string } | 'help' {
  const out: BenchOptions = { rounds: 10, backends: [...ALL_BACKENDS], verbose: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = (): string | undefined => inline ?? argv[++i];
    if (flag === '--help' || flag === '-h') return 'help';
    if (flag === '--verbose') {
      out.verbose = true;
      continue;
    }
    if (flag === '--rounds') {
      const n = Number(value());
      if (!Number.isInteger(n) || n < 1 || n > 1000) return { error: '--rounds needs an integer from 1 to 1000' };
      out.rounds = n;
    } else if (flag === '--backends') {
      const list = (value() ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const unknown = list.filter((b) => !(ALL_BACKENDS as readonly string[]).includes(b));
      if (list.length === 0 || unknown.length > 0)
        return { error: `--backends takes a comma list of ${ALL_BACKENDS.join(', ')}${unknown.length ? ` (unknown: ${unknown.join(', ')})` : ''}` };
      out.backends = list;
    } else {
      return { error: `unknown argument ${a}` };
    }
  }
  return out;
}
