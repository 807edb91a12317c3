/**
 * Live tailer: watches transcript files with chokidar and turns appended bytes into
 * normalized events, one serialized reader per file.
 *
 * Measured facts it is built around: chokidar throttles `change` (~1 per 50 ms) and can leave
 * the last bytes of a burst unannounced, so every event reads from the stored offset to EOF
 * (looping until a read returns nothing) and then schedules ONE re-check read after
 * `recheckMs`. `awaitWriteFinish` is never used. Truncation (size < offset, or the bytes
 * before the offset changed) and rotation (inode change, file removed and re-created) emit
 * `reset` and re-read from 0. A partial last line waits for its newline.
 */
import { EventEmitter } from 'node:events';
import { open, stat, type FileHandle } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { watch, type FSWatcher } from 'chokidar';
import { ContextdError, ErrorCode, describeError } from '../util/errors.js';
import { TranscriptDecoder, sessionIdForFile, type LineError } from './decoder.js';
import type { TailerEvents, TailerFileStats, TailerResetReason, TailerState } from './tailer-events.js';
import { overrideFor, resolveTailerOptions, type ResolvedTailerOptions, type TailerOptions } from './tailer-options.js';

export type { TailerOptions, ResolvedTailerOptions } from './tailer-options.js';

export * from './tailer-events.js';

/** Bytes before the read offset remembered to notice in-place rewrites. */
const FINGERPRINT_BYTES = 32;
const MIN_READ_BYTES = 64 * 1024;

interface FileState {
  readonly file: string;
  readonly sessionId: string;
  readonly decoder: TranscriptDecoder;
  readonly lineErrors: LineError[];
  readPos: number;
  ino: number | undefined;
  tail: Buffer;
  live: boolean;
  announced: boolean;
  gone: boolean;
  reading: Promise<void> | undefined;
  again: boolean;
  eventSeen: boolean;
  recheck: NodeJS.Timeout | undefined;
  removal: NodeJS.Timeout | undefined;
}

function isMissing(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** Watches transcript files and emits normalized events as they grow. */
export class Tailer extends EventEmitter<TailerEvents> {
  readonly options: ResolvedTailerOptions;
  private stateValue: TailerState = 'new';
  private watcher: FSWatcher | undefined;
  private readonly files = new Map<string, FileState>();
  private readonly inflight = new Set<Promise<void>>();
  private initialScanDone = false;
  private closing: Promise<void> | undefined;

  constructor(options: TailerOptions) {
    super();
    this.options = resolveTailerOptions(options);
  }

  get state(): TailerState {
    return this.stateValue;
  }

  /** The resolved watch paths. */
  get paths(): readonly string[] {
    return this.options.paths;
  }

  /** Start watching; resolves after the initial scan and the reads of live files. */
  async start(): Promise<void> {
    if (this.stateValue !== 'new') throw new ContextdError(ErrorCode.LIFECYCLE, `tailer cannot start in state ${this.stateValue}`);
    this.stateValue = 'running';
    const explicit = new Set(this.options.paths);
    const watcher = watch([...this.options.paths], {
      persistent: true,
      ignoreInitial: false,
      alwaysStat: true,
      ignored: (p: string, stats?: Stats) => stats?.isFile() === true && !p.endsWith('.jsonl') && !explicit.has(p),
    });
    this.watcher = watcher;
    watcher.on('add', (p, stats) => this.onAdd(p, stats));
    watcher.on('change', (p) => this.onChange(p));
    watcher.on('unlink', (p) => this.onUnlink(p));
    watcher.on('error', (err) => this.fail(err instanceof Error ? err : new Error(String(err))));
    await new Promise<void>((resolveReady) => watcher.once('ready', () => resolveReady()));
    this.initialScanDone = true;
    await this.settle();
    if (this.stateValue !== 'running') return;
    this.options.logger.debug({ files: this.files.size, paths: this.options.paths }, 'tailer ready');
    this.emit('ready');
  }

  /** Stop watching and wait for in-flight reads. Idempotent: returns the same promise. */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  /** Per-file offsets, counts and inodes. */
  stats(): TailerFileStats[] {
    return [...this.files.values()].map((st) => ({
      file: st.file,
      sessionId: st.sessionId,
      format: st.decoder.format,
      offset: st.decoder.committedOffset,
      readOffset: st.readPos,
      inode: st.ino,
      live: st.live,
      counts: { ...st.decoder.counts },
    }));
  }

  private async doClose(): Promise<void> {
    this.stateValue = 'closing';
    for (const st of this.files.values()) this.clearTimers(st);
    try {
      await this.watcher?.close();
    } catch (err) {
      this.options.logger.warn({ err: describeError(err) }, 'watcher close failed');
    }
    await this.settle();
    this.stateValue = 'closed';
  }

  /** Wait until no read is in flight (reads may start more reads). */
  private async settle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  private get active(): boolean {
    return this.stateValue === 'running';
  }

  private isTranscript(p: string): boolean {
    return p.endsWith('.jsonl') || this.options.paths.includes(p);
  }

  // ---- watcher events ------------------------------------------------------------------

  private onAdd(p: string, stats: Stats | undefined): void {
    if (!this.active || !this.isTranscript(p)) return;
    const existing = this.files.get(p);
    if (existing) {
      this.activate(existing);
      return;
    }
    const override = overrideFor(this.options, p);
    const lineErrors: LineError[] = [];
    const decoder = new TranscriptDecoder({
      maxLineBytes: this.options.maxLineBytes,
      onLineError: (e) => lineErrors.push(e),
      ...(override !== undefined ? { format: override } : {}),
    });
    const mtime = stats?.mtimeMs;
    const live = this.initialScanDone || mtime === undefined || this.options.now() - mtime <= this.options.liveWindowMs;
    const st: FileState = {
      file: p,
      sessionId: sessionIdForFile(p),
      decoder,
      lineErrors,
      readPos: 0,
      ino: undefined,
      tail: Buffer.alloc(0),
      live,
      announced: false,
      gone: false,
      reading: undefined,
      again: false,
      eventSeen: false,
      recheck: undefined,
      removal: undefined,
    };
    this.files.set(p, st);
    if (live) this.requestRead(st, true);
    else this.options.logger.debug({ file: p }, 'file outside the live window: registered, not read');
  }

  private onChange(p: string): void {
    if (!this.active) return;
    const st = this.files.get(p);
    if (!st) {
      this.onAdd(p, undefined);
      return;
    }
    this.activate(st);
  }

  /**
   * Forget what was read of a file whose session is finished: it stays watched, dormant, and
   * is read again from 0 (announced as a new 'session') when it changes. Returns false, and
   * changes nothing, while a read of it is in progress.
   */
  release(file: string): boolean {
    const st = this.files.get(file);
    if (!st || st.reading || st.gone) return false;
    if (st.recheck) clearTimeout(st.recheck);
    st.recheck = undefined;
    st.decoder.reset(0);
    st.lineErrors.length = 0;
    st.readPos = 0;
    st.ino = undefined;
    st.tail = Buffer.alloc(0);
    st.live = false;
    st.announced = false;
    st.eventSeen = false;
    st.again = false;
    return true;
  }

  /** A dormant file changed (read it from 0), or a live one did (read on). */
  private activate(st: FileState): void {
    st.live = true;
    this.requestRead(st, true);
  }

  private onUnlink(p: string): void {
    const st = this.files.get(p);
    if (st && this.active) this.scheduleRemovalCheck(st);
  }

  // ---- reading -------------------------------------------------------------------------

  private requestRead(st: FileState, fromEvent: boolean): void {
    if (!this.active || st.gone || !st.live) return;
    if (fromEvent) st.eventSeen = true;
    if (st.reading) {
      st.again = true;
      return;
    }
    const p = this.readLoop(st).finally(() => {
      st.reading = undefined;
      this.inflight.delete(p);
    });
    st.reading = p;
    this.inflight.add(p);
  }

  private async readLoop(st: FileState): Promise<void> {
    let consumed = 0;
    let sawEvent = false;
    do {
      st.again = false;
      sawEvent ||= st.eventSeen;
      st.eventSeen = false;
      try {
        consumed += await this.readToEof(st);
      } catch (err) {
        this.fail(new ContextdError(ErrorCode.TAIL_READ_FAILED, `cannot read transcript ${st.file}: ${err instanceof Error ? err.message : String(err)}`, { file: st.file, sessionId: st.sessionId }, { cause: err }), st);
      }
    } while (st.again && this.active && !st.gone);
    if ((sawEvent || consumed > 0) && this.active && !st.gone) this.scheduleRecheck(st);
  }

  private scheduleRecheck(st: FileState): void {
    if (st.recheck) clearTimeout(st.recheck);
    st.recheck = setTimeout(() => {
      st.recheck = undefined;
      this.requestRead(st, false);
    }, this.options.recheckMs);
  }

  /** Read from the stored offset to EOF. Returns the bytes consumed. */
  private async readToEof(st: FileState): Promise<number> {
    let fh: FileHandle;
    try {
      fh = await open(st.file, 'r');
    } catch (err) {
      if (!isMissing(err)) throw err;
      this.fail(new ContextdError(ErrorCode.TAIL_FILE_GONE, `transcript file disappeared: ${st.file}`, { file: st.file, sessionId: st.sessionId }), st);
      this.scheduleRemovalCheck(st);
      return 0;
    }
    try {
      const s = await fh.stat();
      if (st.ino !== undefined && s.ino !== st.ino) this.restart(st, 'rotated');
      else if (s.size < st.readPos) this.restart(st, 'truncated');
      else if (!(await this.tailMatches(fh, st))) this.restart(st, 'truncated');
      st.ino = s.ino;
      let consumed = 0;
      let size = s.size;
      while (this.active && !st.gone) {
        const want = Math.min(this.options.readChunkBytes, Math.max(MIN_READ_BYTES, size - st.readPos));
        // A fresh buffer per read: the framer keeps references to a partial line's bytes.
        const buf = Buffer.allocUnsafe(want);
        const { bytesRead } = await fh.read(buf, 0, want, st.readPos);
        if (bytesRead === 0) break;
        const chunk = buf.subarray(0, bytesRead);
        st.readPos += bytesRead;
        size = Math.max(size, st.readPos);
        consumed += bytesRead;
        st.tail = Buffer.from(Buffer.concat([st.tail, chunk.subarray(Math.max(0, bytesRead - FINGERPRINT_BYTES))]).subarray(-FINGERPRINT_BYTES));
        this.deliver(st, chunk);
      }
      return consumed;
    } finally {
      await fh.close();
    }
  }

  /** True when the bytes just before the read offset are still the ones we read. */
  private async tailMatches(fh: FileHandle, st: FileState): Promise<boolean> {
    const n = st.tail.length;
    if (n === 0 || st.readPos < n) return true;
    const buf = Buffer.alloc(n);
    const { bytesRead } = await fh.read(buf, 0, n, st.readPos - n);
    return bytesRead === n && buf.equals(st.tail);
  }

  private deliver(st: FileState, chunk: Buffer): void {
    const fromOffset = st.decoder.committedOffset;
    const events = st.decoder.push(chunk);
    const format = st.decoder.format;
    if (!st.announced && format !== undefined) {
      st.announced = true;
      this.emit('session', { file: st.file, sessionId: st.sessionId, format });
    }
    for (const e of st.lineErrors.splice(0)) {
      this.options.logger.warn({ file: st.file, offset: e.offset, kind: e.kind, bytes: e.bytes }, 'transcript line skipped');
      this.emit('line-error', { file: st.file, sessionId: st.sessionId, ...e });
    }
    const unknown = events.filter((e) => e.type === 'unknown');
    if (unknown.length > 0) {
      this.options.logger.debug({ file: st.file, lineTypes: [...new Set(unknown.map((e) => (e.type === 'unknown' ? e.lineType : '')))] }, 'unknown transcript lines');
    }
    if (events.length > 0 && format !== undefined) {
      this.emit('events', { file: st.file, sessionId: st.sessionId, format, events, fromOffset, toOffset: st.decoder.committedOffset });
    }
  }

  /** The file was truncated, rewritten or replaced: tell consumers, then start over at 0. */
  private restart(st: FileState, reason: TailerResetReason): void {
    this.options.logger.info({ file: st.file, reason, offset: st.readPos }, 'transcript reset');
    if (st.readPos > 0 || st.announced) this.emit('reset', { file: st.file, sessionId: st.sessionId, reason });
    st.decoder.reset(0);
    st.lineErrors.length = 0;
    st.readPos = 0;
    st.tail = Buffer.alloc(0);
  }

  // ---- removal -------------------------------------------------------------------------

  /**
   * A removed file may be a rotation in progress (renamed away, re-created at once): look
   * again after a grace period; if it is back, the next read sees the new inode and resets.
   */
  private scheduleRemovalCheck(st: FileState): void {
    if (st.removal || st.gone) return;
    st.removal = setTimeout(() => {
      st.removal = undefined;
      if (!this.active || st.gone) return;
      stat(st.file).then(
        () => this.requestRead(st, true),
        (err: unknown) => {
          if (!this.active) return;
          if (isMissing(err)) this.remove(st);
          else this.fail(new ContextdError(ErrorCode.TAIL_READ_FAILED, `cannot stat transcript ${st.file}: ${err instanceof Error ? err.message : String(err)}`, { file: st.file, sessionId: st.sessionId }, { cause: err }), st);
        },
      );
    }, Math.max(this.options.recheckMs, 50));
  }

  private remove(st: FileState): void {
    if (st.gone) return;
    st.gone = true;
    this.clearTimers(st);
    this.files.delete(st.file);
    this.options.logger.info({ file: st.file }, 'transcript removed');
    this.emit('removed', { file: st.file, sessionId: st.sessionId });
  }

  private clearTimers(st: FileState): void {
    if (st.recheck) clearTimeout(st.recheck);
    if (st.removal) clearTimeout(st.removal);
    st.recheck = undefined;
    st.removal = undefined;
  }

  private fail(err: Error, st?: FileState): void {
    this.options.logger.warn({ err: describeError(err), code: (err as Partial<ContextdError>).code, file: st?.file }, 'tailer error');
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }
}
