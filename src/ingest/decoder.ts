/**
 * Bytes → lines → JSON → normalized events, for one transcript file.
 *
 * `TranscriptDecoder` is the pure, incremental core shared by the live tailer and offline
 * readers: push any chunking of a file's bytes and you get the same events and counts.
 * A partial last line is held until its newline; blank lines are ignored; lines that are not
 * JSON objects are counted as malformed and skipped; lines over `maxLineBytes` are counted
 * as oversized and skipped (the framer stays in sync).
 */
import { createReadStream, type ReadStream } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { LineFramer } from '../util/framer.js';
import { ContextdError, ErrorCode, fileError } from '../util/errors.js';
import type { LineCounts, TranscriptAdapter, TranscriptFormat } from './types.js';
import type { TranscriptEvent } from '../model/messages.js';
import { createAdapter, detectFormat } from './detect.js';
import { utf8BomLength } from './bom.js';


export const DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024;
/** Object lines kept while the format is still unknown (replayed once it is detected). */
const MAX_UNDETECTED_LINES = 64;

/** A line the decoder skipped, for diagnostics. */
export interface LineError {
  readonly offset: number;
  readonly kind: 'malformed' | 'oversized';
  /** Length of the line in bytes (without the newline). */
  readonly bytes: number;
}

export interface TranscriptDecoderOptions {
  /** Fixed format; when absent it is detected from the first object line(s). */
  readonly format?: TranscriptFormat;
  /** Largest line parsed, in bytes (default 8 MiB). */
  readonly maxLineBytes?: number;
  /** File offset of the first byte that will be pushed (default 0). */
  readonly startOffset?: number;
  /** Called for every malformed or oversized line. */
  readonly onLineError?: (error: LineError) => void;
}

function emptyCounts(): LineCounts {
  return { lines: 0, malformedLines: 0, oversizedLines: 0, unknownLines: 0 };
}

const SPACE = new Set([0x20, 0x09, 0x0d, 0x0a]);
function isBlank(bytes: Buffer): boolean {
  for (const b of bytes) if (!SPACE.has(b)) return false;
  return true;
}

/** Incremental decoder for one transcript file. */
export class TranscriptDecoder {
  readonly counts: LineCounts = emptyCounts();
  private framer: LineFramer;
  private adapter: TranscriptAdapter | undefined;
  private detected: TranscriptFormat | undefined;
  private undetected: { value: Record<string, unknown>; offset: number }[] = [];
  private readonly options: TranscriptDecoderOptions;

  constructor(options: TranscriptDecoderOptions = {}) {
    this.options = options;
    this.framer = new LineFramer({ maxLineBytes: options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES, startOffset: options.startOffset ?? 0, borrowLines: true });
    this.setFormat(options.format);
  }

  /** The file's format, once known. */
  get format(): TranscriptFormat | undefined {
    return this.detected;
  }

  /** Offset just past the last complete line (where a reader resumes after a restart). */
  get committedOffset(): number {
    return this.framer.committedOffset;
  }

  /** Bytes of the partial last line held back. */
  get pendingBytes(): number {
    return this.framer.pendingLength;
  }

  /** Push the next bytes of the file; returns the events of the lines they completed. */
  push(chunk: Buffer): TranscriptEvent[] {
    const events: TranscriptEvent[] = [];
    for (const line of this.framer.push(chunk)) {
      if (line.oversized) {
        this.counts.lines++;
        this.counts.oversizedLines++;
        this.options.onLineError?.({ offset: line.offset, kind: 'oversized', bytes: line.length });
        continue;
      }
      if (isBlank(line.bytes)) continue;
      this.counts.lines++;
      let value: unknown;
      try {
        // A file may start with a UTF-8 byte order mark, which JSON.parse refuses: its first line
        // (often the system prompt) is read without it.
        value = JSON.parse(line.bytes.toString('utf8', line.offset === 0 ? utf8BomLength(line.bytes) : 0));
      } catch {
        value = undefined;
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        this.counts.malformedLines++;
        this.options.onLineError?.({ offset: line.offset, kind: 'malformed', bytes: line.length });
        continue;
      }
      this.handle(value as Record<string, unknown>, line.offset, events);
    }
    return events;
  }

  /** Forget everything (after truncation or rotation): the next push starts at `offset`. */
  reset(offset = 0): void {
    this.framer = new LineFramer({ maxLineBytes: this.options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES, startOffset: offset, borrowLines: true });
    Object.assign(this.counts, emptyCounts());
    this.undetected = [];
    this.detected = undefined;
    this.adapter = undefined;
    this.setFormat(this.options.format);
  }

  private setFormat(format: TranscriptFormat | undefined): void {
    if (format === undefined) return;
    this.detected = format;
    this.adapter = createAdapter(format);
  }

  private handle(value: Record<string, unknown>, offset: number, events: TranscriptEvent[]): void {
    if (this.adapter === undefined) {
      const format = detectFormat(value);
      if (format === undefined) {
        this.undetected.push({ value, offset });
        if (this.undetected.length > MAX_UNDETECTED_LINES) {
          this.undetected.shift();
          this.counts.unknownLines++;
        }
        return;
      }
      this.setFormat(format);
      const held = this.undetected;
      this.undetected = [];
      for (const h of held) this.adapt(h.value, h.offset, events);
    }
    this.adapt(value, offset, events);
  }

  private adapt(value: Record<string, unknown>, offset: number, events: TranscriptEvent[]): void {
    const adapter = this.adapter;
    if (adapter === undefined) return;
    let out: TranscriptEvent[];
    try {
      out = adapter.parseLine(value, offset);
    } catch {
      // Adapters must not throw; if one does, the line is counted and skipped.
      out = [{ type: 'unknown', lineType: 'adapter-error' }];
    }
    let unknown = false;
    for (const e of out) {
      if (e.type === 'unknown') unknown = true;
      events.push(e);
    }
    if (unknown) this.counts.unknownLines++;
  }
}

/** Result of reading a whole transcript file. */
export interface TranscriptFile {
  readonly format: TranscriptFormat;
  readonly events: TranscriptEvent[];
  readonly counts: LineCounts;
  readonly bytes: number;
  /** With `splitAt`: for each of its offsets, the index in `events` of the first event of a line at or after it. */
  readonly splits?: readonly number[];
}

export interface ReadTranscriptOptions {
  readonly format?: TranscriptFormat;
  readonly maxLineBytes?: number;
  /** Stream chunk size in bytes (default 1 MiB). */
  readonly chunkBytes?: number;
  /** Read only the bytes before this offset (a line boundary the tailer committed). */
  readonly endOffset?: number;
  /**
   * The file that was read to `endOffset`: when the file under `path` is another one now
   * (replaced or rotated: another inode) or was rewritten in place (the bytes the tailer read
   * last differ), FILE_REPLACED is thrown instead of reading it.
   */
  readonly expect?: ReadIdentity | undefined;
  /**
   * Offsets of line boundaries, ascending (each at most `endOffset`): the result's `splits` says
   * where in `events` the lines before each one end.
   */
  readonly splitAt?: readonly number[];
}

/** What a tailer read of a file: its inode, and the last bytes it read (`tail`, ending at offset `at`). */
export interface ReadIdentity {
  readonly ino: number;
  readonly tail?: { readonly at: number; readonly bytes: Buffer } | undefined;
}

/**
 * Read a whole transcript file through a decoder. A final line without a newline is parsed
 * too (the file is complete). Throws NOTHING_READ when no line parsed as a JSON object and
 * FORMAT_UNKNOWN when lines parsed but no format could be recognized.
 */
export async function readTranscriptFile(path: string, options: ReadTranscriptOptions = {}): Promise<TranscriptFile> {
  const decoder = new TranscriptDecoder({ format: options.format, maxLineBytes: options.maxLineBytes });
  const events: TranscriptEvent[] = [];
  let bytes = 0;
  let lastByte = -1;
  if (options.endOffset === 0) throw new ContextdError(ErrorCode.NOTHING_READ, `no transcript line could be parsed in ${path}`, { path, bytes: 0 });
  const streamOptions = { highWaterMark: options.chunkBytes ?? 1024 * 1024, ...(options.endOffset !== undefined ? { end: options.endOffset - 1 } : {}) };
  const stream = options.expect === undefined ? createReadStream(path, streamOptions) : await openSameFile(path, options.expect, streamOptions);
  const splitAt = options.splitAt ?? [];
  const splits: number[] = [];
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      // A split offset inside this chunk: the bytes before it complete the lines that end there.
      let rest = chunk;
      let at = bytes;
      for (let next = splitAt[splits.length]; next !== undefined && next <= at + rest.length; next = splitAt[splits.length]) {
        const head = rest.subarray(0, Math.max(0, next - at));
        for (const e of decoder.push(head)) events.push(e);
        splits.push(events.length);
        rest = rest.subarray(head.length);
        at += head.length;
      }
      bytes += chunk.length;
      if (chunk.length > 0) lastByte = chunk[chunk.length - 1] ?? -1;
      for (const e of decoder.push(rest)) events.push(e);
    }
  } catch (err) {
    throw fileError(path, err);
  }
  if (bytes > 0 && lastByte !== 0x0a) for (const e of decoder.push(Buffer.from('\n'))) events.push(e);
  const c = decoder.counts;
  const parsed = c.lines - c.malformedLines - c.oversizedLines;
  if (parsed <= 0) {
    throw new ContextdError(ErrorCode.NOTHING_READ, `no transcript line could be parsed in ${path}`, { path, bytes, ...c });
  }
  if (decoder.format === undefined) {
    throw new ContextdError(ErrorCode.FORMAT_UNKNOWN, `transcript format not recognized in ${path}`, { path, bytes, ...c });
  }
  // Split points past the bytes read (the file ended before them) fall after every event.
  while (splits.length < splitAt.length) splits.push(events.length);
  return { format: decoder.format, events, counts: { ...c }, bytes, ...(options.splitAt ? { splits } : {}) };
}

/** A stream of `path` when it is still the file `expect` describes (checked on the open descriptor it reads). */
async function openSameFile(path: string, expect: ReadIdentity, options: { highWaterMark: number; end?: number }): Promise<ReadStream> {
  const { ino, tail } = expect;
  let fh;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    throw fileError(path, err);
  }
  let now: number;
  try {
    now = (await fh.stat()).ino;
  } catch (err) {
    await fh.close();
    throw fileError(path, err);
  }
  if (now !== ino) {
    await fh.close();
    throw new ContextdError(ErrorCode.FILE_REPLACED, `${path} was replaced since it was read (another file under its name)`, { path, inode: now, expected: ino });
  }
  // Truncated and rewritten in place keeps the inode: the bytes read last must still be there.
  let same = true;
  try {
    if (tail && tail.bytes.length > 0) same = await holdsAt(fh, tail.bytes, tail.at - tail.bytes.length);
  } catch (err) {
    await fh.close();
    throw fileError(path, err);
  }
  if (!same && tail) {
    await fh.close();
    throw new ContextdError(ErrorCode.FILE_REPLACED, `${path} was rewritten since it was read (its content before offset ${tail.at} changed)`, { path, inode: now, offset: tail.at });
  }
  return fh.createReadStream(options);
}

/** Whether `fh` holds `bytes` at `position`. */
async function holdsAt(fh: FileHandle, bytes: Buffer, position: number): Promise<boolean> {
  if (position < 0) return false;
  const buf = Buffer.alloc(bytes.length);
  const { bytesRead } = await fh.read(buf, 0, bytes.length, position);
  return bytesRead === bytes.length && buf.equals(bytes);
}

/**
 * The part of a tailed transcript the tailer applied: the lines before `endOffset` (a line
 * boundary it committed), decoded as the tailer's `format` with its line limit (`maxLineBytes`,
 * default when undefined). What a released session is rebuilt from and a live session harvested from.
 * `expect`: what the tailer read of it (FILE_REPLACED when the path names another file now, or
 * the file was rewritten in place). `splitAt`: offsets to split the events at (`TranscriptFile.splits`).
 */
export function readTranscriptPrefix(path: string, format: TranscriptFormat, endOffset: number, maxLineBytes: number | undefined, expect?: ReadIdentity, splitAt?: readonly number[]): Promise<TranscriptFile> {
  return readTranscriptFile(path, { format, endOffset, maxLineBytes, expect, ...(splitAt ? { splitAt } : {}) });
}
