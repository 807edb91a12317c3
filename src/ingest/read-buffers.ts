/**
 * Reusable read buffers for the tailer.
 *
 * Measured with `bench load` (50 sessions × 20 lines/s): a fresh buffer per read (at least
 * 64 KiB, for an append of a few hundred bytes) left 90–136 MiB of dead buffers outside the
 * heap between collections. A read borrows a buffer only for the read itself and the synchronous
 * decoding of its bytes (the decoder copies what it keeps), then gives it back.
 *
 * Two sizes: appends are read into small buffers, kept for reuse (a steady reader allocates none
 * after its first reads); the large reads of a first scan or a catch-up use large ones, of which
 * only a few are kept. A read that finds all buffers of its size borrowed waits for one, so a
 * scan of many files never holds more than `max` large buffers at once.
 */

export interface ReadBufferPoolOptions {
  /** Size of every buffer (bytes). */
  readonly bytes: number;
  /** Most buffers borrowed or free at once (a read beyond waits). */
  readonly max: number;
  /** Free buffers kept for reuse; more given back are dropped (default `max`). */
  readonly keep?: number;
}

/** A pool of equal-sized buffers, borrowed for one read at a time. */
export class ReadBufferPool {
  readonly bytes: number;
  readonly max: number;
  private readonly keep: number;
  private readonly free: Buffer[] = [];
  private readonly waiting: ((b: Buffer) => void)[] = [];
  /** Buffers borrowed or free now. */
  private existing = 0;
  /** Buffers allocated so far. */
  allocated = 0;

  constructor(options: ReadBufferPoolOptions) {
    this.bytes = options.bytes;
    this.max = Math.max(1, options.max);
    this.keep = Math.min(this.max, options.keep ?? this.max);
  }

  /** A buffer of `bytes` bytes (contents undefined); waits while all `max` are borrowed. */
  take(): Buffer | Promise<Buffer> {
    const b = this.free.pop();
    if (b) return b;
    if (this.existing < this.max) {
      this.existing++;
      this.allocated++;
      return Buffer.allocUnsafeSlow(this.bytes);
    }
    return new Promise<Buffer>((resolve) => this.waiting.push(resolve));
  }

  /** Give a borrowed buffer back (the borrower must not read it afterwards). */
  give(b: Buffer): void {
    const next = this.waiting.shift();
    if (next) next(b);
    else if (this.free.length < this.keep) this.free.push(b);
    else this.existing--;
  }
}

/** The tailer's buffers: small ones for appends, large ones for long reads. */
export class ReadBuffers {
  readonly small: ReadBufferPool;
  readonly large: ReadBufferPool;

  /** `smallBytes`: the largest read served from the small pool; `largeBytes`: the longest read. */
  constructor(smallBytes: number, largeBytes: number) {
    this.small = new ReadBufferPool({ bytes: Math.min(smallBytes, largeBytes), max: 16 });
    this.large = new ReadBufferPool({ bytes: largeBytes, max: 8, keep: 2 });
  }

  /** A buffer for a read of `n` bytes (at most `largeBytes`), and the pool to give it back to. */
  take(n: number): { pool: ReadBufferPool; buf: Buffer | Promise<Buffer> } {
    const pool = n <= this.small.bytes ? this.small : this.large;
    return { pool, buf: pool.take() };
  }
}
