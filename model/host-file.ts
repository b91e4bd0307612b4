/** A workspace file as the host itself sees it: no link followed, on any component of its path. */
export interface HostFileState {
  path: string;
  kind: 'file' | 'missing' | 'other';
  dev?: number;
  ino?: number;
  size?: number;
  sha256?: string;
  /** Permission bits (st_mode & 0o7777), where the host could lstat the path. */
  mode?: number;
  /** What is there instead of a regular file (a link, a directory, a component that is not a directory). */
  note?: string;
}
