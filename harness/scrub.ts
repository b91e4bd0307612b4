/** Where sandcheck keeps run state on the host (bwrap workspaces, private Docker daemons). */
const STATE_PATHS = /\/(?:run|var\/lib)\/sandcheck\/[^\s"'(),\\]*/g;

/**
 * Replaces this machine's paths of the run (its scratch directory, sandcheck's state directories)
 * in every string of a result, so reports carry no host temp paths. Box-chosen text stays as is.
 */
export function scrubHostPaths<T>(value: T, scratchDir: string): T {
  const json = JSON.stringify(value);
  const scratch = JSON.stringify(scratchDir).slice(1, -1);
  return JSON.parse(json.split(scratch).join('<run-scratch>').replace(STATE_PATHS, '<sandcheck-state>')) as T;
}
