/**
 * Reusable read buffers for the tailer.
 *
 * Measured with `bench load` (50 sessions × 20 lines/s): a fresh buffer per read (at least
 * 64 KiB, for an append of a few hundred bytes) left 90–136 MiB of dead buffers outside the
 * heap between collections, and the first scan of 100 transcripts held one 1 MiB buffer per
 * file being read. A read borrows a buffer only for the read itself and the synchronous
 * decoding of its bytes (the decoder copies what it keeps), then gives it back. At most `max`
 * buffers exist: a read that finds none free waits for one (reads run on libuv's few threads
 * anyway, so more buffers would only wait in its queue).
 */

export interface ReadBufferPoolOptions {
  /** Size of every buffer (bytes); a read of more takes several turns. */
  readonly bytes: number;
  /** Most buffers in existence (default 4: libuv's default thread pool size). */
  readonly max?: number;
}

/** A small pool of equal-sized buffers, borrowed for one read at a time. */
export class ReadBufferPool {
  readonly bytes: number;
  readonly max: number;
  private readonly free: Buffer[] = [];
  private readonly waiting: ((b: Buffer) => void)[] = [];
  /** Buffers allocated so far: never more than `max`, however many reads. */
  allocated = 0;

  constructor(options: ReadBufferPoolOptions) {
    this.bytes = options.bytes;
    this.max = Math.max(1, options.max ?? 4);
  }

  /** A buffer of `bytes` bytes (contents undefined); waits while all `max` are borrowed. */
  take(): Buffer | Promise<Buffer> {
    const b = this.free.pop();
    if (b) return b;
    if (this.allocated < this.max) {
      this.allocated++;
      return Buffer.allocUnsafeSlow(this.bytes);
    }
    return new Promise<Buffer>((resolve) => this.waiting.push(resolve));
  }

  /** Give a borrowed buffer back (the borrower must not read it afterwards). */
  give(b: Buffer): void {
    const next = this.waiting.shift();
    if (next) next(b);
    else this.free.push(b);
  }
}
