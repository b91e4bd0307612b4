import { z } from 'zod';

/**
 * bwrap's `--json-status-fd` stream: one JSON document per line, `{ "child-pid": N, … }` when the box's
 * first process exists and `{ "exit-code": N }` when it ended. Only bwrap (outside the box) and the
 * launcher hold this fd, so it is the out-of-band exit status: the box cannot forge it.
 */
const StatusDocSchema = z.looseObject({
  'child-pid': z.number().int().positive().optional(),
  'exit-code': z.number().int().optional(),
  'sandcheck-launch-error': z.string().optional(),
});

export class StatusReader {
  childPid: number | undefined;
  exitCode: number | undefined;
  launchError: string | undefined;
  /** Lines that were not a status document (never expected; kept for the start error). */
  garbage = 0;
  private pending = '';
  private readonly onChild: ((pid: number) => void)[] = [];

  onChildPid(fn: (pid: number) => void): void {
    if (this.childPid !== undefined) fn(this.childPid);
    else this.onChild.push(fn);
  }

  feed(chunk: Uint8Array): void {
    this.pending += Buffer.from(chunk).toString('utf8');
    // Bound what a confused writer could make us hold.
    if (this.pending.length > 64 * 1024) this.pending = this.pending.slice(-64 * 1024);
    let nl: number;
    while ((nl = this.pending.indexOf('\n')) >= 0) {
      const line = this.pending.slice(0, nl).trim();
      this.pending = this.pending.slice(nl + 1);
      if (line !== '') this.line(line);
    }
  }

  end(): void {
    const rest = this.pending.trim();
    this.pending = '';
    if (rest !== '') this.line(rest);
  }

  private line(text: string): void {
    let doc: z.infer<typeof StatusDocSchema>;
    try {
      const parsed = StatusDocSchema.safeParse(JSON.parse(text));
      if (!parsed.success) {
        this.garbage++;
        return;
      }
      doc = parsed.data;
    } catch {
      this.garbage++;
      return;
    }
    if (doc['sandcheck-launch-error'] !== undefined) this.launchError = doc['sandcheck-launch-error'];
    if (doc['exit-code'] !== undefined) this.exitCode = doc['exit-code'];
    const pid = doc['child-pid'];
    if (pid !== undefined && this.childPid === undefined) {
      this.childPid = pid;
      for (const fn of this.onChild.splice(0)) fn(pid);
    }
  }
}
