/**
 * A bounded newline framer shared by the transcript tailer and the socket server.
 *
 * Feed it bytes; it yields complete lines (without the trailing `\n` or `\r\n`) and keeps a
 * partial last line until its newline arrives. A line longer than `maxLineBytes` is not
 * buffered: its bytes are dropped as they arrive, and once its newline shows up the framer
 * reports one `oversized` line with its byte length and stays in sync for the next line.
 */
export interface FramedLine {
  /** The line's bytes (no newline). Empty for oversized lines. */
  readonly bytes: Buffer;
  /** Byte offset of the line's first byte in the stream fed so far (plus `startOffset`). */
  readonly offset: number;
  /** Length of the line in bytes, excluding the newline. */
  readonly length: number;
  /** True when the line exceeded maxLineBytes; `bytes` is then empty. */
  readonly oversized: boolean;
}

export interface LineFramerOptions {
  /** Largest line kept, in bytes (default 8 MiB). */
  maxLineBytes?: number;
  /** Stream offset of the first byte that will be pushed (default 0). */
  startOffset?: number;
  /**
   * A line that lies whole in one pushed chunk is returned as a view of that chunk, not a copy:
   * only for a caller that is done with the lines before it reuses or drops the chunk (the
   * transcript decoder parses them at once). Saves one allocation per line (default false).
   */
  borrowLines?: boolean;
}

const NEWLINE = 0x0a;
const CR = 0x0d;

export class LineFramer {
  readonly maxLineBytes: number;
  private chunks: Buffer[] = [];
  private pendingBytes = 0;
  private lineStart: number;
  private discarding = false;
  private discardedBytes = 0;
  /** Whether `chunks` holds a view of the caller's chunk (not a copy). */
  private borrowed = false;
  private readonly borrowLines: boolean;

  constructor(options: LineFramerOptions = {}) {
    this.maxLineBytes = options.maxLineBytes ?? 8 * 1024 * 1024;
    this.borrowLines = options.borrowLines ?? false;
    this.lineStart = options.startOffset ?? 0;
  }

  /** Offset just past the last complete line: where a reader should resume after a restart. */
  get committedOffset(): number {
    return this.lineStart;
  }

  /** Bytes of the partial line held back (0 while discarding an oversized line). */
  get pendingLength(): number {
    return this.discarding ? this.discardedBytes : this.pendingBytes;
  }

  /** Push a chunk; returns the lines it completed, in order. */
  push(chunk: Buffer): FramedLine[] {
    const out: FramedLine[] = [];
    let pos = 0;
    while (pos < chunk.length) {
      const nl = chunk.indexOf(NEWLINE, pos);
      const end = nl === -1 ? chunk.length : nl;
      const piece = chunk.subarray(pos, end);
      if (this.discarding) {
        this.discardedBytes += piece.length;
      } else if (this.pendingBytes + piece.length > this.maxLineBytes) {
        this.discarding = true;
        this.discardedBytes = this.pendingBytes + piece.length;
        this.chunks = [];
        this.pendingBytes = 0;
      } else if (piece.length > 0) {
        // A partial line is copied: the caller may reuse its buffer (the tailer does), and a
        // few bytes must not pin a large chunk until the newline comes.
        this.borrowed = nl !== -1 && this.chunks.length === 0;
        this.chunks.push(nl === -1 ? Buffer.from(piece) : piece);
        this.pendingBytes += piece.length;
      }
      if (nl === -1) break;
      out.push(this.finishLine());
      pos = nl + 1;
    }
    return out;
  }

  /** Drop any partial line and restart at `offset` (after truncation or rotation). */
  reset(offset = 0): void {
    this.chunks = [];
    this.pendingBytes = 0;
    this.discarding = false;
    this.discardedBytes = 0;
    this.lineStart = offset;
  }

  private finishLine(): FramedLine {
    const offset = this.lineStart;
    let line: FramedLine;
    if (this.discarding) {
      line = { bytes: Buffer.alloc(0), offset, length: this.discardedBytes, oversized: true };
      this.lineStart += this.discardedBytes + 1;
    } else {
      // A copy (concat copies) unless borrowing: the line must not pin, or change with, the caller's chunk.
      const one = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : undefined;
      let bytes = one ? (this.borrowed && this.borrowLines ? one : Buffer.from(one)) : Buffer.concat(this.chunks, this.pendingBytes);
      const length = bytes.length;
      if (length > 0 && bytes[length - 1] === CR) bytes = bytes.subarray(0, length - 1);
      line = { bytes, offset, length, oversized: false };
      this.lineStart += length + 1;
    }
    this.chunks = [];
    this.pendingBytes = 0;
    this.borrowed = false;
    this.discarding = false;
    this.discardedBytes = 0;
    return line;
  }
}
