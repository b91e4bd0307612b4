import type { ByteSink } from '../../model/backend-contract.js';

/**
 * Splits Docker's multiplexed attach/exec stream (`Tty: false`): frames of an 8-byte header
 * (stream type, 3 bytes padding, uint32 big-endian length) followed by the payload. Unlike
 * dockerode's `demuxStream`, it forwards at most `capBytes` of stdout + stderr together and calls
 * `onCap` once when the box tries to write past it; the rest is drained, never buffered.
 */
export class CappedDemux {
  private readonly header = Buffer.alloc(8);
  private headerFill = 0;
  private frameLeft = 0;
  private frameType = 1;
  /** Bytes passed on to the sinks. */
  forwarded = 0;
  /** Bytes the box wrote in all (forwarded or not). */
  seen = 0;
  truncated = false;

  constructor(
    private readonly capBytes: number,
    private readonly stdout: ByteSink,
    private readonly stderr: ByteSink,
    private readonly onCap: () => void,
  ) {}

  feed(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.frameLeft === 0) {
        const take = Math.min(8 - this.headerFill, chunk.length - at);
        chunk.copy(this.header, this.headerFill, at, at + take);
        this.headerFill += take;
        at += take;
        if (this.headerFill < 8) return;
        this.headerFill = 0;
        this.frameType = this.header[0] ?? 1;
        this.frameLeft = this.header.readUInt32BE(4);
        continue;
      }
      const take = Math.min(this.frameLeft, chunk.length - at);
      this.deliver(chunk.subarray(at, at + take));
      this.frameLeft -= take;
      at += take;
    }
  }

  private deliver(data: Buffer): void {
    this.seen += data.length;
    if (this.truncated) return;
    // 1 = stdout; 2 = stderr; 3 = the daemon's own error channel; anything else is treated as stderr.
    const target = this.frameType === 1 ? this.stdout : this.stderr;
    const room = this.capBytes - this.forwarded;
    if (data.length <= room) {
      if (data.length > 0) target.write(data);
      this.forwarded += data.length;
      return;
    }
    if (room > 0) target.write(data.subarray(0, room));
    this.forwarded += Math.max(0, room);
    this.truncated = true;
    this.onCap();
  }
}
