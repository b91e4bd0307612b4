/** The run's decoy values (canaries): what the lab plants and the judges look for. */

/**
 * Every canary carries this prefix so a payload can pick decoy values out of an environment
 * without ever copying a real secret of the machine into a report.
 */
export const CANARY_PREFIX = 'SCNRY';

/**
 * The decoy marker a searching payload looks for: every decoy file holds a canary (CANARY_PREFIX, a kind,
 * 24 hex digits of this run) within its first DECOY_MARKER_WINDOW bytes, so a bounded walk finds it by
 * reading only a file's head. No real file holds this run's random value.
 */
export const DECOY_MARKER_WINDOW = 256;

export interface Canary {
  /** Where it was planted, e.g. env:AWS_SECRET_ACCESS_KEY or file:.aws/credentials. */
  label: string;
  value: string;
}

export interface CanarySet {
  env: Record<string, string>;
  /** Relative path inside the decoy directory → file content. */
  files: Record<string, string>;
  /** Relative path → file mode; absent means 0644 (loose, as real secrets often are). */
  modes: Record<string, number>;
  all: Canary[];
}
