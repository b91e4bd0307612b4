import type { SecurityResult, SecurityScorecard, TaskResult } from '../../model/scorecard.js';

/**
 * The verdicts a run's report shows, in the words of README "Reading a report" and docs/concepts.md: what each
 * means and what to do about it. The legend and the per-result "what to do" lines both come from here.
 */
export interface LegendEntry {
  /** The verdict as the cards write it; also its CSS class. */
  verdict: string;
  card: 'security' | 'task' | 'both';
  means: string;
  todo: string;
}

export const LEGEND: readonly LegendEntry[] = [
  {
    verdict: 'crossed',
    card: 'security',
    means: 'outside evidence shows the boundary was crossed: a canary came out, a decoy was contacted, a host file changed, a limit was passed',
    todo: 'a failure: fix the sandbox (the remediation hint is a start) and run the probe again until it is held',
  },
  {
    verdict: 'unenforced',
    card: 'security',
    means:
      'the policy requires the item, the backend does not claim it, and its probe was not run (--trust-claims, or a network probe whose box the host cannot place) (JUnit: failure)',
    todo: 'a failure: enforce and claim the item, or change the policy if it asks for too much',
  },
  {
    verdict: 'inconclusive',
    card: 'security',
    means:
      "neither could be shown: the probe did not demonstrably run, a witness was blind, or something other than the probe's own control stopped it (JUnit: error)",
    todo: 'read the reason, fix the cause and run again; never read it as held',
  },
  {
    verdict: 'held',
    card: 'security',
    means: 'the probe demonstrably ran, nothing crossed, and the control it tests was seen stopping it from outside',
    todo: 'nothing',
  },
  {
    verdict: 'not-applicable',
    card: 'both',
    means: 'not run: the policy does not ask for the item, or the cause lies outside the box (no lab, a tool missing); JUnit shows it as skipped',
    todo: 'coverage you did not get: check the count beside held and crossed',
  },
  {
    verdict: 'waived',
    card: 'security',
    means: 'a crossed or unenforced result a live waiver accepts: the verdict stays, the exit code does not count it until the waiver expires (JUnit: skipped)',
    todo: 'fix it before the waiver expires',
  },
  {
    verdict: 'false-claim',
    card: 'security',
    means: 'the backend claims to enforce the policy item and its probe crossed or was inconclusive',
    todo: 'fix the control, or stop claiming the item (its probe still runs: crossed — not claimed is a failure too where the policy requires it)',
  },
  {
    verdict: 'as-expected',
    card: 'task',
    means: 'the task case came out as expected: a correct program accepted, a correct-looking wrong one rejected',
    todo: 'nothing',
  },
  {
    verdict: 'unexpected',
    card: 'task',
    means: 'a correct program was rejected (the box stopped legitimate work) or a wrong result was accepted',
    todo: 'read the reason and the attempts, fix the cause and run the case again',
  },
  {
    verdict: 'error',
    card: 'task',
    means: "a harness failure, kept apart from the box's failures: the case could not be judged",
    todo: 'read the harness error and run again; report it if it stays',
  },
];

const SEVERITY_RANK: Record<SecurityResult['severity'], number> = { critical: 0, high: 1, medium: 2, low: 3 };
const VERDICT_RANK: Record<SecurityResult['verdict'], number> = { crossed: 0, unenforced: 1, inconclusive: 2, held: 3, 'not-applicable': 4 };

/** Security results as the report lists them: crossed, unenforced, inconclusive, held, not applicable; unwaived first; the most severe first. */
export function securityOrder(a: SecurityResult, b: SecurityResult): number {
  return (
    VERDICT_RANK[a.verdict] - VERDICT_RANK[b.verdict] ||
    Number(a.waiver !== undefined) - Number(b.waiver !== undefined) ||
    SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity] ||
    a.id.localeCompare(b.id)
  );
}

const TASK_RANK: Record<TaskResult['outcome'], number> = { unexpected: 0, error: 1, 'not-applicable': 2, 'as-expected': 3 };
export const taskOrder = (a: TaskResult, b: TaskResult): number => TASK_RANK[a.outcome] - TASK_RANK[b.outcome] || a.id.localeCompare(b.id);

/** Whether the backend claims the result's policy item, and whether that claim is false (claimed, yet crossed or inconclusive). */
export function claimOf(r: SecurityResult, card: SecurityScorecard): 'false claim' | 'claimed' | 'not claimed' {
  if (r.claimed === false || !card.backend.enforces.includes(r.policyItem)) return 'not claimed';
  return r.verdict === 'crossed' || r.verdict === 'inconclusive' ? 'false claim' : 'claimed';
}

/** A word for a shell command line: as is when it needs no quoting, else in single quotes. */
const shellWord = (w: string): string => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replaceAll("'", `'\\''`)}'`);

/** How to run this one probe or case alone, as the run that made the card did. */
function reproduce(id: string, card: SecurityScorecard): string {
  const config = card.environment?.backendConfig ? ` --backend-config ${shellWord(card.environment.backendConfig.file)}` : '';
  return `sandcheck run --backend ${shellWord(card.backend.name)}${config} --policy ${shellWord(card.policy.name)} --only ${shellWord(id)}`;
}

/** "What to do about this crossing": one line per security result that needs a look. */
export function securityTodo(r: SecurityResult, card: SecurityScorecard): string[] {
  const claim = claimOf(r, card);
  const again = `Reproduce it alone: ${reproduce(r.id, card)}`;
  const waived = r.waiver ? [`Accepted by a waiver (${r.waiver.owner}, until ${r.waiver.expires}): ${r.waiver.reason}. Fix it before then.`] : [];
  switch (r.verdict) {
    case 'crossed':
      return [
        ...waived,
        `Fix: ${r.remediation}`,
        claim === 'false claim'
          ? `${card.backend.name} claims to enforce ${r.policyItem}: this is a FALSE CLAIM. Fix the control, or stop claiming it (the probe still runs: crossed — not claimed is a failure too where the policy requires it).`
          : `crossed — not claimed: ${card.backend.name} does not claim ${r.policyItem}, and the probe, run anyway, crossed. Enforce it, or change the policy if it should not ask for it.`,
        again,
      ];
    case 'unenforced':
      return [
        ...waived,
        `The policy requires ${r.policyItem} and ${card.backend.name} does not claim to enforce it: enforce and claim it, or change the policy if it asks for too much.`,
        `When enforced: ${r.remediation}`,
      ];
    case 'inconclusive':
      return [
        'Never read this as held: read the reason, fix what kept the probe from showing either way (an interpreter, a witness, another limit that stopped it first), then run it again.',
        ...(claim === 'false claim' ? [`${card.backend.name} claims ${r.policyItem}, and this probe could not show it holding.`] : []),
        again,
      ];
    default:
      return [];
  }
}

/** What to do about a task case that did not come out as expected. */
export function taskTodo(r: TaskResult, card: SecurityScorecard): string[] {
  const again = `Run it again alone: ${reproduce(r.id, card)} (with your --tasks DIR for a case of your own)`;
  if (r.outcome === 'error')
    return [
      `A harness failure${r.harnessError ? ` (${r.harnessError.code})` : ''}, not the box's: read the reason and run again; report it if it stays.`,
      again,
    ];
  if (r.outcome !== 'unexpected') return [];
  return r.expected === 'accept'
    ? [
        'A correct program was rejected: the box stopped legitimate work. Read the reason, the attempts and the box output (a limit too tight, a tool or input missing, an export refused).',
        again,
      ]
    : ['A wrong result was accepted: check the exported artifacts and the exporter against what the case expects.', again];
}
