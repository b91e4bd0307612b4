/** A workspace file as the host itself sees it: no link followed, on any component of its path. */
export interface HostFileState {
  path: string;
  kind: 'file' | 'missing' | 'other';
  dev?: number;
  ino?: number;
  size?: number;
  sha256?: string;
  /** What is there instead of a regular file (a link, a directory, a component that is not a directory). */
  note?: string;
}
