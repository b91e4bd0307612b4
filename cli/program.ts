import { Command, InvalidArgumentError, Option } from '@commander-js/extra-typings';
import { describeBackends } from '../backends/registry.js';
import { EXIT, SandcheckError, errorMessage } from '../core/errors.js';
import { packageVersion } from '../core/paths.js';
import { parseShard } from '../model/shard-arg.js';
import { parseBackendList } from './backend-list-arg.js';

// The command line (cli/main.ts loads it for everything but a bare `--version`). Each command imports what it
// needs when it runs: `--help`, `list` and `doctor` stay quick (test/unit/cli-module-graph.test.ts holds the line).

function parseShardOption(value: string): ReturnType<typeof parseShard> {
  try {
    return parseShard(value);
  } catch (err) {
    throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
  }
}

function backendListOption(value: string, previous: string[] | undefined): string[] {
  try {
    return parseBackendList(value, previous);
  } catch (err) {
    throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
  }
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

function pngSize(value: string): { width: number; height: number } {
  const m = /^(\d{2,5})x(\d{2,5})$/.exec(value);
  if (!m) throw new InvalidArgumentError('expected WIDTHxHEIGHT, e.g. 1400x1000');
  return { width: Number(m[1]), height: Number(m[2]) };
}

export async function main(argv: readonly string[]): Promise<number> {
  let code: number = EXIT.ok;
  const program = new Command()
    .name('sandcheck')
    .description('Adversarial conformance tests for code-execution sandboxes: a security scorecard and a task scorecard.')
    .version(packageVersion())
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });

  program
    .command('run')
    .description('run the security suite and the task suite against a backend and write both scorecards')
    .addOption(
      new Option(
        '-b, --backend <name>',
        `backend to test (${describeBackends()
          .map((b) => b.name)
          .join(
            ', ',
          )}, rpc:<command> for an adapter process in any language (docs/rpc-protocol.md), or a module path / package whose default export is an adapter factory); default: bwrap where it works, else process`,
      ),
    )
    .option('--backend-config <file>', 'YAML/JSON options for the backend (e.g. bwrap extraBinds, shareNetwork, limits)')
    .option('-p, --policy <preset|file>', 'policy preset (ci, the default: 5 s wall; reference: 30 s wall) or a YAML/JSON policy file')
    .option('-o, --out <dir>', 'directory for security.json, task.json and their JUnit XML (default: out)')
    .option('--only <ids...>', 'run only these probe / task ids')
    .option('--tasks <dir>', 'also run the task cases (YAML, JSON or .mjs) in this directory')
    .option('--image <ref>', 'docker backends: an image you already have (needs python3), instead of the offline-built probe image')
    .option(
      '--docker-socket <path>',
      'docker backends: an existing daemon instead of a private one started inside the lab (network probes then need --live-network)',
    )
    .option(
      '--watch-daemon <sockets...>',
      "real Docker/Podman daemon sockets a box may be handed: their own event logs are read after each execution (never written to) and a box's nonce-named call is an outside witness for host-search; each must answer /_ping before anything runs",
    )
    .option('--live-network', 'no lab: network probes try the real addresses (only inside a disposable cloud machine)')
    .option(
      '--witness <file|url>',
      "judge the network probes from a `sandcheck witness serve` (its --state file, or its URL with SANDCHECK_WITNESS_TOKEN) instead of a lab of the run's own",
    )
    .option(
      '--exporter <name>',
      'the exporter artifacts pass and the export probes judge: reference (the default), naive (unsafe, positive controls only), command:<file.yaml> or a module path',
    )
    .option(
      '-j, --concurrency <n>',
      'at most n environments at once, never more CPU-bound ones than cores (default: a CPU-bound one per core and as many sleeping ones beside them)',
      positiveInt,
    )
    .option('--skip-adapter-check', 'run an external (module) adapter without first passing its blocking `adapter check`')
    .option(
      '--trust-claims',
      "do not run the probes of a required item the backend does not claim: record it unenforced on the claim's word (default: run them and judge what is observed)",
    )
    .option(
      '--waivers <file>',
      'accepted findings (YAML/JSON, reports/schema/waivers.schema.json): a crossing a live waiver matches is marked waived and not counted in the exit code',
    )
    .option(
      '--shard <i/n>',
      'run only slice i of n of the selection (deterministic, balanced by expected duration), for a CI matrix; join the --out directories with `sandcheck merge`',
      parseShardOption,
    )
    .option(
      '--label <text>',
      'a short text recorded in both cards (environment.label) that tells this run apart from other runs of the same backend in `compare`',
    )
    .option('--json', 'print the summary as JSON on stdout (reports/schema/run-summary.schema.json); progress and notices stay on stderr')
    .option('--html', 'also write OUT/report.html, the run as one self-contained page a person reads (as `sandcheck report OUT --html`)')
    .option(
      '--certify <dir>',
      'also write a sign-off bundle to this new directory (scorecards, JUnit, policy, environment fingerprint, manifest.sha256); refuses --waivers and skips for a missing tool or lab',
    )
    .option('--config <file>', 'read the run options from this YAML/JSON file instead of ./sandcheck.yaml (flags win over the file)')
    .option('--no-config', 'ignore ./sandcheck.yaml: only the flags and the defaults')
    .action(async (opts) => {
      const { resolveRunOptions } = await import('./run-config.js');
      code = await (await import('./run-command.js')).runCommand(await resolveRunOptions(opts));
    });

  program
    .command('merge')
    .description(
      'join the --out directories of `run --shard 1/n … n/n` into one pair of scorecards (refuses mixed backends, policies, sandcheck versions or a missing shard); exit as the whole run would',
    )
    .argument('<dirs...>', "the shards' --out directories")
    .requiredOption('-o, --out <dir>', 'directory for the merged security.json, task.json, JUnit and SARIF')
    .action(async (dirs, opts) => {
      code = await (await import('./merge-command.js')).mergeCommand(dirs, opts);
    });

  program
    .command('verify')
    .description(
      'check a sign-off bundle (run --certify DIR): every file against manifest.sha256, no file added, every report valid; exit 1 naming each changed file',
    )
    .argument('<dir>', 'the bundle directory')
    .option('--json', 'print the result as JSON')
    .action(async (dir, opts) => {
      code = await (await import('./certify-command.js')).verifyCommand(dir, opts);
    });

  program
    .command('backends')
    .description('every built-in backend and preset: its claims (ci policy), whether it works here, the exact install command when it does not')
    .option('--json', 'print the report as JSON')
    .action(async (o) => {
      code = await (await import('./backends-command.js')).backendsCommand({ json: o.json === true }, process.stdout);
    });

  program
    .command('list')
    .description('list probes and task cases: id, category, policy item, ATT&CK and CWE ids, title')
    .option('--json', 'machine-readable output')
    .option('--tasks <dir>', 'include the task cases in this directory')
    .action(async (opts) => {
      code = await (await import('./list-command.js')).listCommand(opts);
    });

  program
    .command('doctor')
    .description(
      'which backends and lab parts work on this machine, and the exact command to install what is missing; exit 1 when the chosen backend or the lab cannot work',
    )
    .option('-b, --backend <name>', 'the backend to check as `run` would load it (default: what `run` picks: bwrap where it works, else process)')
    .option('--backend-config <file>', 'YAML/JSON options for that backend')
    .option('--json', 'machine-readable output (reports/schema/doctor-report.schema.json)')
    .action(async (opts) => {
      code = await (await import('./doctor.js')).doctor(process.stdout, opts);
    });

  program
    .command('compare')
    .description(
      'put the scorecards of several runs (backends) side by side (* marks rows where they differ), or gate a policy change: --base B --head H exits 1 on any unwaived regression',
    )
    .argument('[dirs...]', 'output directories of earlier `sandcheck run`s (side by side)')
    .option('--base <dir>', 'the gate: the run before the change (e.g. the main branch)')
    .option('--head <dir>', 'the gate: the run after the change (e.g. the pull request)')
    .option('--waivers <file>', 'the gate: accepted findings (YAML/JSON, reports/schema/waivers.schema.json)')
    .option('--json', 'the gate: print the report as JSON (reports/schema/gate-report.schema.json) instead of text')
    .addOption(
      new Option(
        '--fail-on <severity>',
        'the gate: security regressions below this severity are reported, not failures (default low: every one fails); policy loosenings, dropped claims and task regressions always fail',
      ).choices(['critical', 'high', 'medium', 'low'] as const),
    )
    .option(
      '--exclude <id-or-tag>',
      'the gate: leave out the probes and task cases with this id, category (e.g. network) or policy item (e.g. resources.processes); repeatable or comma-separated',
      (value: string, previous: string[] | undefined) => {
        const parts = value.split(',').map((p) => p.trim());
        if (parts.some((p) => p === '' || p.length > 128))
          throw new InvalidArgumentError('expected a probe or task case id, a category or a policy item (1..128 characters each, comma-separated)');
        return [...(previous ?? []), ...parts];
      },
    )
    .option('--markdown <file>', 'also write the comparison (or the gate) with its evidence as Markdown')
    .action(async (dirs, opts) => {
      const { compareMode, gateCommand } = await import('./gate-command.js');
      code =
        compareMode(dirs, opts) === 'gate' && opts.base !== undefined && opts.head !== undefined
          ? await gateCommand({ ...opts, base: opts.base, head: opts.head })
          : await (await import('./compare-command.js')).compareCommand(dirs, opts);
    });

  program
    .command('matrix')
    .description(
      'several backends side by side in one report (matrix.md, self-contained matrix.html, matrix.json): verdicts linked to their evidence, totals, cold start, claims against what was observed; exit 2 when a backend was unavailable',
    )
    .argument('[dirs...]', 'output directories of earlier `sandcheck run`s')
    .option(
      '-b, --backend <names>',
      'also run these backends (comma-separated, e.g. process,bwrap), each as `run` would into OUT/runs/<backend>; one this machine cannot run becomes a column marked unavailable with its install command',
      backendListOption,
    )
    .option('-p, --policy <preset|file>', 'policy for the --backend runs (preset ci or reference, or a file)', 'ci')
    .option('--only <ids...>', 'the --backend runs: only these probe / task ids')
    .option('--tasks <dir>', 'the --backend runs: also run the task cases in this directory')
    .option('-j, --concurrency <n>', 'the --backend runs: at most n environments at once (default: sized from the cores, as `run`)', positiveInt)
    .requiredOption('-o, --out <dir>', 'directory for matrix.md, matrix.html, matrix.json (and runs/)')
    .option('--png <file>', 'also render matrix.html to this PNG in headless chromium (how docs/matrix-example.png is made)')
    .option('--png-size <WxH>', 'the --png window size (default 1400x1000)', pngSize)
    .action(async (dirs, opts) => {
      code = await (await import('./matrix-command.js')).matrixCommand(dirs, opts);
    });

  program
    .command('adapter')
    .description("an adapter's own conformance tests")
    .command('check')
    .description('run the adapter conformance checks (fresh environments, files, exec, timeout, abort, destroy) against a backend')
    .requiredOption('-b, --backend <name|path|package>', 'a built-in backend name, or a module whose default export is the adapter factory')
    .option('--backend-config <file>', 'YAML/JSON options passed to the backend factory')
    .option('-p, --policy <preset|file>', 'policy handed to create()', 'ci')
    .option('-o, --out <dir>', 'also write adapter-check.json and adapter.junit.xml here')
    .option('--json', 'print the report as JSON')
    .action(async (opts) => {
      code = await (await import('./adapter-command.js')).adapterCheckCommand(opts);
    });

  program
    .command('witness')
    .description('outside witnesses for boxes that run elsewhere')
    .command('serve')
    .description(
      'keep a lab (decoys on every address, resolver, packet capture) up for runs whose boxes can reach it; runs judge their network probes from its records (run --witness)',
    )
    .option('--listen <where>', 'unix:/path/to.sock or http://HOST:PORT (default: a unix socket under /run/sandcheck)')
    .option('--state <file>', 'write url, token and pid here (mode 0600) for `sandcheck run --witness FILE`')
    .action(async (opts) => {
      code = await (await import('./witness-command.js')).witnessServeCommand(opts);
    });

  program
    .command('clean')
    .description('remove what runs that died left on this machine (namespaces, processes, cgroups, mounts, directories), by their ownership journals')
    .option('--dry-run', 'only list what would be removed')
    .action(async (opts) => {
      code = await (await import('./clean-command.js')).cleanCommand(opts);
    });

  program
    .command('report')
    .description(
      'one run as a page a person reads (DIR --html: both cards, what needs a look first with its evidence and what to do, a legend), or rebuild the cards of a run that died (--recover DIR)',
    )
    .argument('[dir]', 'the --out directory of a finished `sandcheck run` (with --html)')
    .option('--html', 'write DIR/report.html: one self-contained page (no script, nothing loaded), every text from the box escaped')
    .option('--html-file <file>', 'write the page here instead of DIR/report.html')
    .option('--base <dir>', 'with --html: also show what changed against this earlier run (as `compare --base DIR --head DIR` classifies it)')
    .option('--recover <dir>', 'turn the run journal a run that died left in its --out directory into valid scorecards marked incomplete')
    .action(async (dir, opts) => {
      code = await (await import('./report-command.js')).reportCommand(dir, opts);
    });

  const policy = program.command('policy').description('inspect policies');
  policy
    .command('explain')
    .description('print the bounds a policy implies: worst-case wait, export volume, output caps')
    .option('-p, --policy <preset|file>', 'policy preset or file', 'reference')
    .option('--json', 'machine-readable output')
    .action(async (opts) => {
      const [{ loadPolicy }, { explainPolicy, policyBounds }] = await Promise.all([
        import('../harness/policy-loader.js'),
        import('../harness/policy-explain.js'),
      ]);
      const p = await loadPolicy(opts.policy);
      process.stdout.write(opts.json ? `${JSON.stringify(policyBounds(p), null, 2)}\n` : `${explainPolicy(p)}\n`);
      code = EXIT.ok;
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (err) {
    if (err instanceof SandcheckError) {
      process.stderr.write(`${err.format()}\n`);
      return err.isUsage ? EXIT.usage : err.code === 'INTERNAL' || err.code === 'REPORT_WRITE_FAILED' ? EXIT.internal : EXIT.inconclusive;
    }
    if (err !== null && typeof err === 'object' && 'code' in err && typeof err.code === 'string' && err.code.startsWith('commander.')) {
      const exitCode = 'exitCode' in err && typeof err.exitCode === 'number' ? err.exitCode : 1;
      return exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    const code = err !== null && typeof err === 'object' && 'code' in err ? err.code : undefined;
    if (code === 'ENOSPC' || code === 'EDQUOT') {
      // A full disk is no harness bug: one line, and the way back (the run journal survives in --out).
      process.stderr.write(
        `sandcheck: REPORT_WRITE_FAILED: no space left on the device (${code}): ${errorMessage(err)}\n  hint: free some space, then rebuild the cards with: sandcheck report --recover <the --out directory>\n`,
      );
      return EXIT.internal;
    }
    process.stderr.write(`sandcheck: internal error: ${errorMessage(err)}\n${err instanceof Error ? (err.stack ?? '') : ''}\n`);
    return EXIT.internal;
  }
}
