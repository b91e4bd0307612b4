import { z } from 'zod';
import { POLICY_ITEMS } from '../../model/backend-contract.js';
import { ToolTempSchema } from './tool-temp.js';

/**
 * The command backend's configuration file (YAML or JSON): a sandbox that ships a command line, described
 * as argv templates. Placeholders expand to whole argv elements only (see template.ts); what the tool
 * claims to enforce is declared in `claims` and then verified by the probes.
 */

const argvTemplate = z.array(z.string()).min(1);
/** `boxWorkspace: "{workspace}"`: the box sees the workspace at its host path. */
export const HOST_PATH = '{workspace}';
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected an environment variable name' });

export const StatusSourceSchema = z.discriminatedUnion('format', [
  z.strictObject({
    /** bubblewrap's `--json-status-fd`: `{"child-pid": N}` then `{"exit-code": N}`, one JSON document a line. */
    format: z.literal('bwrap-json'),
    /** The descriptor the harness opens for the tool (3–9); `{statusFd}` expands to it. */
    fd: z.number().int().min(3).max(9),
    /**
     * What the status's child-pid is: 'runtime-init' = the tool's own init (bwrap with a pid namespace),
     * left out of the box's processes; 'program' = the program itself.
     */
    childPid: z.enum(['runtime-init', 'program']).default('runtime-init'),
  }),
  z.strictObject({
    /**
     * A JSON file the tool writes when the program ended (`{statusFile}`): `exitCode` (or `exit-code`),
     * optional `signal` ("SIGKILL" or a number), `timedOut`, `oomKilled` (booleans, recorded as the tool's claims).
     */
    format: z.literal('json-file'),
  }),
]);

export const CommandBackendConfigSchema = z
  .strictObject({
    name: z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,40}$/, { error: 'lower-case letters, digits, "_", "." and "-"' }),
    description: z.string().default(''),
    /** one-shot: every exec wraps the program; session: `session.create` once, exec inside it, `session.destroy`. */
    shape: z.enum(['one-shot', 'session']).default('one-shot'),
    /** Policy items the tool claims to enforce. Anything not claimed is declared not enforced (fail closed). */
    claims: z.array(z.enum(POLICY_ITEMS)).default([]),
    /** Why an item is not claimed, shown next to its `unenforced` / not-applicable verdict. */
    notClaimedReasons: z.partialRecord(z.enum(POLICY_ITEMS), z.string()).default({}),
    /** The host uid (and gid) the tool runs the box as: writable inputs are given to it, read-only ones stay root's. */
    boxUid: z.number().int().min(0).max(4294967294).optional(),
    /**
     * The workspace as the box sees it: `{boxWorkspace}`, `{boxCwd}` and `{boxPath}` are built on it. The literal
     * `{workspace}` means the box sees the host directory at its host path (tools that show the host's tree: firejail, `runsc do`).
     */
    boxWorkspace: z.union([z.literal(HOST_PATH), z.string().regex(/^\//, { error: 'an absolute path, or {workspace} for the host path' })]).default('/work'),
    /**
     * The host side of the workspace (`{workspace}`; `{tmp}` a second directory on the same filesystem):
     * 'disk-image' = an ext4 image of the policy's diskMb, loop-mounted; 'tmpfs' = a sized tmpfs;
     * 'host-dir' = a plain directory with no size limit.
     */
    workspace: z.enum(['disk-image', 'tmpfs', 'host-dir']).default('host-dir'),
    /**
     * 'none': the box cannot write anything the harness reads back (a sandbox whose mode is read-only everywhere).
     * The adapter check then reports the writing half of files.nested as not applicable, and task cases that need
     * written results are not-applicable; `resultsReason` (required with 'none') says why, in the tool's own terms.
     */
    results: z.enum(['written', 'none']).default('written'),
    resultsReason: z.string().min(1).optional(),
    /** See ToolTempSchema (runsc do's /tmp/runsc-do<N>, removed at destroy and by the crash sweep). */
    toolTemp: ToolTempSchema.optional(),
    /** `{image}`: for tools that run an image (a container CLI). Using `{image}` without it is a config error. */
    image: z.string().min(1).optional(),
    exec: z.strictObject({
      /** The launcher: argv template; `{argv...}` splices the program's argv. It starts in this file's directory. */
      argv: argvTemplate,
      /** The launcher's whole environment (the harness's own, with the run's decoy credentials, never reaches it). */
      env: z.record(envName, z.string()).default({ PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' }),
      /** Per program variable, spliced at `{env...}` (e.g. ["--setenv", "{name}", "{value}"]); without `{env...}` they go in the launcher's environment. */
      envArg: z.array(z.string()).min(1).optional(),
      /** Per read-only input, spliced at `{readOnly...}` (e.g. ["--ro-bind", "{hostPath}", "{boxPath}"]). */
      readOnlyArg: z.array(z.string()).min(1).optional(),
      stdin: z.enum(['pipe', 'none']).default('pipe'),
      /** Out-of-band outcome; without one the launcher's exit status is the program's (never stderr). */
      status: StatusSourceSchema.optional(),
    }),
    /**
     * How to ask the tool for its version (no placeholders): run by preflight with an empty environment and a short
     * timeout, its first line shown with the backend's description in every report.
     */
    version: z
      .strictObject({
        argv: argvTemplate,
        timeoutMs: z.number().int().positive().max(60_000).default(10_000),
      })
      .optional(),
    session: z
      .strictObject({
        /** Run once per environment; the first line of its stdout is `{sessionRef}`. */
        create: argvTemplate,
        /** Run at destroy (once, idempotent from the harness's side). */
        destroy: argvTemplate,
        /** Run after the harness wrote input files into `{workspace}` (e.g. a copy into the session). */
        put: argvTemplate.optional(),
        /** Run before the harness reads artifacts from `{workspace}` (e.g. a copy out of the session). */
        get: argvTemplate.optional(),
        timeoutMs: z.number().int().positive().default(30_000),
      })
      .optional(),
  })
  .superRefine((c, ctx) => {
    if (c.shape === 'session' && !c.session)
      ctx.addIssue({ code: 'custom', path: ['session'], message: 'shape "session" needs session.create and session.destroy' });
    if (c.shape === 'one-shot' && c.session) ctx.addIssue({ code: 'custom', path: ['session'], message: 'session commands need shape: session' });
    if (c.results === 'none' && c.resultsReason === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['resultsReason'],
        message: "results: none needs resultsReason: why the box cannot write results (e.g. the tool's read-only mode)",
      });
    if (c.results === 'written' && c.resultsReason !== undefined)
      ctx.addIssue({ code: 'custom', path: ['resultsReason'], message: 'resultsReason is only for results: none' });
    for (const item of c.claims) {
      if (c.notClaimedReasons[item] !== undefined) ctx.addIssue({ code: 'custom', path: ['notClaimedReasons', item], message: `${item} is claimed` });
    }
  })
  .meta({ id: 'sandcheck-command-backend', title: 'sandcheck command backend (--backend command --backend-config FILE)' });

export type CommandBackendConfig = z.output<typeof CommandBackendConfigSchema>;
export type StatusSource = z.output<typeof StatusSourceSchema>;
