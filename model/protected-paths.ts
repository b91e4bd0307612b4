// Apart from policy.ts so that a probe reading it does not load zod with the suite (sandcheck list stays light).

/** Paths inside a writable workspace that something runs later (git, shells, editors, agents): what `files.protected` names by default. */
export const DEFAULT_PROTECTED_PATHS: readonly string[] = ['.git/hooks', '.git/config', '.bashrc', '.vscode/tasks.json', '.claude/settings.json'];
