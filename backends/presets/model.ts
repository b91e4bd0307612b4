import type { PolicyItem } from '../../model/backend-contract.js';

/** A program a preset needs on this machine, and the exact Debian command that installs it. */
export interface PresetRequirement {
  /** A binary name looked up in the system binary directories, or an absolute path. */
  binary: string;
  install: string;
}

/**
 * A preset: a sandbox CLI people ship, run through the command backend with the flags that make it that tool's
 * documented mode. Its claims are only what the tool itself documents that it enforces, plus what sandcheck's
 * command adapter does around every tool (ADAPTER_CLAIMS); the probes then verify each one.
 */
export interface PresetDefinition {
  /** `--backend preset:<name>`; also the backend name in reports. */
  name: string;
  /** One line: what the tool is and the mode it runs in. */
  summary: string;
  /** The exact command that installs everything it needs on Debian (root). */
  install: string;
  requires: readonly PresetRequirement[];
  /** The command backend file as an object (validated by CommandBackendConfigSchema) and the directory its relative paths start from. */
  config(): Promise<{ raw: Record<string, unknown>; configDir: string }>;
  /**
   * The `{image}` the tool runs, made when the first environment is created: never by `backends`, `doctor`, a
   * preflight or a run that stops before any box (a root filesystem takes seconds and disk to build).
   */
  image?(): Promise<string>;
}

/** The `image` a preset's file holds until its `image()` answers at the first environment. */
export const IMAGE_AT_FIRST_BOX = '/nonexistent/sandcheck-image-made-at-the-first-box';

/**
 * What sandcheck's command adapter enforces around any tool: its own wall clock and process-group kill, its own
 * output cap, the counting cgroup's kill at destroy, and the lstat-only download API with the reference exporter.
 */
export const ADAPTER_CLAIMS = ['resources.wallSeconds', 'output.maxBytes', 'lifecycle.destroyAfter', 'exports.limits'] as const satisfies readonly PolicyItem[];
