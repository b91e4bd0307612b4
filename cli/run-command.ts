import { defaultBackend, loadBackend } from '../backends/registry.js';
import { backendOptionsFrom, namingConfigFile } from './backend-options.js';
import { selectProbes } from '../suites/index.js';
import { summaryText } from '../reports/summary-table.js';
import { EXIT, SandcheckError } from '../core/errors.js';
import { loadPolicy } from '../harness/policy-loader.js';
import { runSuite } from '../harness/run-suite.js';
import { writeScorecards } from '../reports/write-cards.js';
import { checkOutDir, createOutDir } from '../core/out-dir.js';
import { safeJsonStringify } from '../core/clean-text.js';
import { loadTaskDir } from '../harness/task/load-tasks.js';
import { progressReporter } from './progress.js';
import { requireTrustedAdapter } from './adapter-command.js';
import { afterRun } from './run-reports.js';
import { loadWaivers } from '../harness/waivers.js';
import { connectWitness } from '../lab/witness/client.js';
import { resolveExporter } from '../harness/export/exporter-choice.js';
import { cleanLabel, collectEnvironment } from '../harness/environment-facts.js';
import { certifyAfterRun, certifyBackend, certifyBeforeRun } from './certify-command.js';
import { runSummary } from '../reports/run-summary.js';
import { shardProbes, type Shard } from '../harness/shard.js';
import { checkWatchDaemons } from '../harness/watch-daemon.js';
import type { RunConfigRecord } from '../model/run-options.js';

/** What one run can write into --out at most: the reports of every result, and each task case's artifacts. */
export function outBytesBound(probes: readonly { kind: string }[], policy: { exports: { maxTotalMb: number } }): number {
  const tasks = probes.filter((p) => p.kind === 'task').length;
  return REPORT_BYTES_BASE + probes.length * REPORT_BYTES_PER_RESULT + tasks * policy.exports.maxTotalMb * 1024 * 1024;
}
/** Measured on full runs (five report files, capped evidence texts), with a wide margin. */
const REPORT_BYTES_BASE = 4 * 1024 * 1024;
const REPORT_BYTES_PER_RESULT = 512 * 1024;

/** --image / --docker-socket / DOCKER_HOST become docker backend options (on top of a --backend-config file). */
function withDockerFlags(fileOptions: unknown, opts: { backend?: string; image?: string; dockerSocket?: string }): unknown {
  const isDocker = opts.backend !== undefined && ['docker-default', 'docker-hardened', 'gvisor', 'docker'].includes(opts.backend);
  if (!isDocker) {
    if (opts.image || opts.dockerSocket)
      throw new SandcheckError('USAGE', '--image and --docker-socket are options of the docker backends', {
        hint: 'add --backend docker-hardened (or docker-default, gvisor)',
      });
    return fileOptions;
  }
  // Any other shape is the backend's to refuse: never merged into nothing.
  if (fileOptions !== undefined && (typeof fileOptions !== 'object' || fileOptions === null || Array.isArray(fileOptions))) return fileOptions;
  const base = (fileOptions ?? {}) as Record<string, unknown>;
  return {
    ...base,
    ...(opts.image ? { image: opts.image } : {}),
    ...(opts.dockerSocket
      ? { socketPath: opts.dockerSocket }
      : !('socketPath' in base) && !('daemon' in base) && process.env['DOCKER_HOST']
        ? { daemon: 'docker-host' }
        : {}),
  };
}

export interface RunCommandOptions {
  backend?: string;
  backendConfig?: string;
  policy: string;
  out: string;
  only?: string[];
  concurrency?: number;
  tasks?: string;
  exporter: string;
  liveNetwork?: boolean;
  witness?: string;
  image?: string;
  dockerSocket?: string;
  skipAdapterCheck?: boolean;
  trustClaims?: boolean;
  waivers?: string;
  label?: string;
  json?: boolean;
  /** Also write OUT/report.html (cli/report-command.ts). */
  html?: boolean;
  certify?: string;
  shard?: Shard;
  watchDaemon?: string[];
  /** The sandcheck.yaml the options came from (cli/run-config.ts), recorded in both cards. */
  runConfig?: RunConfigRecord;
}

/** `sandcheck run`: checks every input before anything starts, runs the suite, prints the summary, writes the reports (and a sign-off bundle). */
/** CI services set CI (GitHub Actions, GitLab, most others); `CI=false` or `CI=0` says it is not one. */
export function inCi(env: NodeJS.ProcessEnv): boolean {
  const v = env['CI'];
  return v !== undefined && v !== '' && v !== '0' && v.toLowerCase() !== 'false';
}

export async function runCommand(opts: RunCommandOptions): Promise<number> {
  const policy = await loadPolicy(opts.policy);
  if (opts.label !== undefined) cleanLabel(opts.label);
  const waivers = opts.waivers ? await loadWaivers(opts.waivers) : undefined;
  if (opts.witness && opts.liveNetwork) throw new SandcheckError('USAGE', '--witness and --live-network both say who judges the network probes: choose one');
  // An unreachable witness is a usage error before anything starts.
  const witness = opts.witness ? await connectWitness(opts.witness) : undefined;
  // Likewise a watched daemon that is not there: its silence would read as a box that never called it.
  const watchDaemons = opts.watchDaemon ? await checkWatchDaemons(opts.watchDaemon) : undefined;
  // The exporter the export probes judge: a bad command file or module is a config error before anything runs.
  const exporter = await resolveExporter(opts.exporter);
  const userTasks = opts.tasks ? await loadTaskDir(opts.tasks) : [];
  const selected = selectProbes(opts.only, userTasks);
  // Every shard computes the same assignment from the same selection and policy.
  const probes = opts.shard ? shardProbes(selected, opts.shard, policy) : selected;
  if (opts.certify) await certifyBeforeRun({ ...opts, certify: opts.certify }, probes);
  // Read and shape-checked before anything is created: a refused file leaves no --out behind.
  const backendOptions = withDockerFlags(await backendOptionsFrom(opts), opts);
  const outDir = await checkOutDir(opts.out, outBytesBound(probes, policy));
  const reporter = progressReporter(process.stderr);
  // Caught from here on: an interrupt during back-end start-up (a daemon, an image import) still ends in interrupted reports.
  const interrupt = new AbortController();
  const onSignal = (sig: NodeJS.Signals): void => {
    // Caught until the backend is disposed: a second Ctrl-C must not kill the harness halfway through its cleanup.
    if (interrupt.signal.aborted)
      return void reporter.onNotice?.(`${sig}: still cleaning up (stopping environments, removing what the run made); this ends by itself`);
    reporter.onNotice?.(`${sig}: stopping every live environment and writing the reports…`);
    interrupt.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const stopCatching = (): void => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  let backend;
  try {
    if (opts.backend) {
      const name = opts.backend;
      backend = await namingConfigFile(opts.backendConfig, () => loadBackend(name, backendOptions));
    } else {
      // The file goes to the backend that runs, the default one too: checked by its schema, never dropped.
      const chosen = await namingConfigFile(opts.backendConfig, () => defaultBackend(backendOptions));
      backend = chosen.backend;
      if (chosen.fallbackReason && inCi(process.env)) {
        await backend.dispose?.().catch(() => undefined);
        throw new SandcheckError(
          'BACKEND_UNAVAILABLE',
          `the default backend bwrap cannot run here (${chosen.fallbackReason}), and in CI (CI=${process.env['CI'] ?? ''}) a run never falls back to the unsandboxed process control: it would test nothing`,
          { hint: 'run as root after `npm run setup` (`sandcheck doctor` lists what is missing), or ask for the control itself with --backend process' },
        );
      }
      if (chosen.fallbackReason)
        reporter.onNotice?.(
          `bwrap is not usable here (${chosen.fallbackReason}); falling back to the process control. Run \`sandcheck doctor\` to see what to install.`,
        );
    }
    await backend.prepare?.(policy);
    await backend.preflight();
    if (opts.backend && opts.skipAdapterCheck)
      reporter.onNotice?.('WARNING: --skip-adapter-check: the verdicts rest on an adapter whose own conformance was not checked');
    else if (opts.backend) await requireTrustedAdapter(opts.backend, backend, policy, (t) => reporter.onNotice?.(t));
    if (opts.certify) certifyBackend(backend, policy, probes);
    if (backend.capabilities(policy).isolation === 'none') {
      reporter.onNotice?.(
        `WARNING: backend "${backend.name}" isolates NOTHING: probes run as plain host processes (the positive control). Expect every security probe to be crossed.`,
      );
    }
    await createOutDir(outDir, (m) => reporter.onNotice?.(m));
  } catch (err) {
    // Ctrl-C reaches a daemon being started too: a failure after an interrupt is the interrupt.
    if (!interrupt.signal.aborted || backend === undefined) {
      await backend?.dispose?.().catch(() => undefined);
      stopCatching();
      if (interrupt.signal.aborted) return EXIT.interrupted;
      throw err;
    }
  }
  try {
    if (opts.exporter === 'naive')
      reporter.onNotice?.('WARNING: the naive exporter follows links and extracts archives: use it only to see the export probes cross.');
    if (opts.liveNetwork) {
      reporter.onNotice?.(
        'WARNING: --live-network: no lab. Network probes will try REAL addresses (cloud metadata, public hosts) from this machine. Only for a disposable cloud machine you mean to test.',
      );
    }
    // The tools' `--version` processes run while runSuite sweeps and sets up; it awaits them (and any failure) before the journal opens.
    const environmentSoon = collectEnvironment({
      policy,
      backendName: opts.backend ?? backend.name,
      backend,
      ...(opts.backendConfig ? { backendConfig: opts.backendConfig, backendOptions } : {}),
      ...(opts.dockerSocket ? { dockerSocket: opts.dockerSocket } : {}),
      ...(opts.label !== undefined ? { label: opts.label } : {}),
    }).then((environment) => ({ ...environment, ...(opts.runConfig ? { runConfig: opts.runConfig } : {}) }));
    environmentSoon.catch(() => undefined);
    const outcome = await runSuite({
      writeCards: writeScorecards,
      backend,
      policy,
      environment: environmentSoon,
      probes,
      outDir: opts.out,
      concurrency: opts.concurrency,
      reporter,
      signal: interrupt.signal,
      exporter,
      liveNetwork: opts.liveNetwork === true,
      ...(opts.trustClaims === true ? { trustClaims: true } : {}),
      ...(witness ? { witness } : {}),
      ...(waivers ? { waivers } : {}),
      ...(opts.shard ? { shard: opts.shard } : {}),
      ...(watchDaemons ? { watchDaemons } : {}),
    });
    // With --json the one JSON document is all of stdout: the text summary and notices go to stderr.
    const text = opts.json ? process.stderr : process.stdout;
    const notices: string[] = [];
    text.write(`${summaryText(outcome.security, outcome.task)}\n`);
    text.write(`reports: ${Object.values(outcome.files).join(', ')}\n`);
    await afterRun(outcome, (line) => {
      notices.push(line);
      text.write(`${line}\n`);
    });
    if (opts.html) text.write(`html report: ${await (await import('./report-command.js')).writeRunHtml(opts.out, outcome)}\n`);
    // A signal after the reports were written does not make a finished run interrupted: the code follows the reports.
    let code: number = outcome.security.run.interrupted ? EXIT.interrupted : outcome.exitCode;
    let certified: { dir: string; manifest: string } | undefined;
    if (opts.certify) {
      try {
        const environment = await environmentSoon;
        const manifest = await certifyAfterRun(opts.certify, outcome, {
          backend,
          backendKind: opts.backend ?? backend.name,
          policy,
          probes,
          environment,
          ...(opts.image ? { image: opts.image } : {}),
        });
        certified = { dir: opts.certify, manifest };
        text.write(`sign-off bundle: ${opts.certify} (check it later with \`sandcheck verify ${opts.certify}\`)\n`);
      } catch (err) {
        if (!(err instanceof SandcheckError)) throw err;
        process.stderr.write(`${err.format()}\n`);
        notices.push(err.format());
        // An interrupt (130) or a harness failure (4) says more than the refusal that follows from it.
        if (code !== EXIT.interrupted && code !== EXIT.internal) code = EXIT.usage;
      }
    }
    if (opts.json) process.stdout.write(`${safeJsonStringify(runSummary(outcome, code, { notices, ...(certified ? { certify: certified } : {}) }), 2)}\n`);
    return code;
  } finally {
    await backend.dispose?.().catch(() => undefined);
    stopCatching();
  }
}
