/**
 * Live tailer: watches transcript files with chokidar and turns appended bytes into
 * normalized events, one serialized reader per file.
 *
 * Measured facts it is built around: chokidar throttles `change` (~1 per 50 ms) and can leave
 * the last bytes of a burst unannounced. So a live file is also read on chokidar's unthrottled
 * `raw` events (an append reaches the decoder within a millisecond, not at the next 50 ms);
 * every event reads from the stored offset to EOF (looping until a read returns nothing) and
 * then schedules ONE re-check read after `recheckMs`. `awaitWriteFinish` is never used.
 * Truncation (size < offset, or the bytes before the offset changed) and rotation (inode
 * change, file removed and re-created) emit `reset` and re-read from 0. A partial last line
 * waits for its newline.
 *
 * Hostile folders: only regular files are read. Files are opened O_NONBLOCK and checked with
 * fstat, so a FIFO, socket or device never blocks a thread (skipped with one warning). Symlinks
 * leading out of the watch roots are skipped unless `followSymlinks`. A file that cannot be
 * opened (EACCES) is logged once and retried with back-off until it can. Warnings are
 * rate-limited per file. A new folder is scanned again after it appears, so files written into
 * it before chokidar watched it are not missed.
 *
 * Descriptors: at most `maxOpenFiles` transcripts are open at once, counting both the files
 * being read and those kept open between reads (DescriptorSlots). A read that finds none free
 * closes the least recently read idle one, or waits for a read to end; a scan of thousands of
 * files reads them `maxOpenFiles` at a time. If the process runs out of descriptors all the same
 * (EMFILE, ENFILE: something else holds them), the idle descriptors are closed and the file is
 * read again after a back-off (STARVED_RETRY_MS, doubling), never given up on.
 *
 * Per-append cost: a live file's descriptor stays open between reads; each read is one stat of
 * the path (rotation, truncation) and reads that start FINGERPRINT_BYTES before the offset, so
 * the fingerprint comes with the data.
 */
import { EventEmitter } from 'node:events';
import { open, readdir, realpath, stat, type FileHandle } from 'node:fs/promises';
import { constants as fsConstants, type Stats } from 'node:fs';
import { join, sep } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { ContextdError, ErrorCode, describeError } from '../util/errors.js';
import { RateLimitedLog } from '../util/log-limit.js';
import { TranscriptDecoder, type LineError, type ReadIdentity } from './decoder.js';
import { DescriptorSlots } from './descriptor-slots.js';
import { ReadBuffers } from './read-buffers.js';
import { RootPresence } from './root-presence.js';
import { pathSessionId, sessionIdFor } from './session-id.js';
import type { TailerEvents, TailerFileStats, TailerResetReason, TailerState } from './tailer-events.js';
import { overrideFor, resolveTailerOptions, type ResolvedTailerOptions, type TailerOptions } from './tailer-options.js';

export type { TailerOptions, ResolvedTailerOptions } from './tailer-options.js';

export * from './tailer-events.js';

/** Bytes before the read offset remembered to notice in-place rewrites. */
const FINGERPRINT_BYTES = 32;
const MIN_READ_BYTES = 64 * 1024;
/** Longest wait between retries of a file that cannot be opened. */
const MAX_RETRY_MS = 60_000;
/** First retry of a read that failed for lack of descriptors (EMFILE, ENFILE); doubles from there. */
const STARVED_RETRY_MS = 100;
/** Longest wait between retries of a read that failed for lack of descriptors. */
const MAX_STARVED_RETRY_MS = 5_000;
/** Delay before a folder is listed again after its listing failed for lack of descriptors. */
const STARVED_RESCAN_MS = 1_000;
/** Re-scans of a new folder after chokidar reports it (ms after the report). */
const NEW_DIR_RESCANS_MS = [0, 150, 1_000] as const;

interface FileState {
  readonly file: string;
  readonly sessionId: string;
  readonly decoder: TranscriptDecoder;
  readonly lineErrors: LineError[];
  readPos: number;
  ino: number | undefined;
  /** The last bytes read (up to FINGERPRINT_BYTES of them, `tailLength`): the fingerprint. */
  readonly tail: Buffer;
  tailLength: number;
  live: boolean;
  announced: boolean;
  gone: boolean;
  reading: Promise<void> | undefined;
  again: boolean;
  eventSeen: boolean;
  recheck: NodeJS.Timeout | undefined;
  /** A raw change event's read is queued for the next check phase (several raw events, one read). */
  rawQueued: boolean;
  /** What the last read's stat saw (ino, size, mtime): a later `change` naming the same is old news. */
  seen: { ino: number; size: number; mtimeMs: number } | undefined;
  removal: NodeJS.Timeout | undefined;
  /** The open descriptor of a live file (kept between reads); it holds one of the tailer's slots. */
  fh: FileHandle | undefined;
  /** A read is using `fh` now: it is not closed to free its slot for another file. */
  busy: boolean;
  /** The next back-off after a read failed for lack of descriptors (EMFILE, ENFILE). */
  starvedRetryMs: number;
  /** Not a readable transcript (FIFO, socket, device, link out of the roots): never read. */
  skipped: string | undefined;
  /** Open failed (EACCES…): when to retry, and the current back-off. */
  retry: NodeJS.Timeout | undefined;
  retryMs: number;
  unreadable: boolean;
}

/** What opening a file found. */
type Opened = { readonly fh: FileHandle; readonly ino: number } | { readonly skip: string };

function errnoOf(err: unknown): unknown {
  return (err as { code?: unknown } | null)?.code;
}

function isMissing(err: unknown): boolean {
  const code = errnoOf(err);
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** The process (EMFILE) or the system (ENFILE) is out of file descriptors: passes once some are closed. */
function isStarved(err: unknown): boolean {
  const code = errnoOf(err);
  return code === 'EMFILE' || code === 'ENFILE';
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
  /** Session id → file, so two paths never share an id. */
  private readonly idOwners = new Map<string, string>();
  /** Files whose descriptor is open, least recently read first. */
  private readonly openOrder = new Set<FileState>();
  /** At most `maxOpenFiles` descriptors, open or being opened. */
  private readonly slots: DescriptorSlots;
  /** Watch roots as given and as resolved through symlinks. */
  private rootReals: string[] = [];
  /** Bumped by each resolution of the roots, so an older one finishing late is dropped. */
  private rootsResolved = 0;
  private readonly warnings: RateLimitedLog;
  /** The buffers every read borrows (a few, reused: never one per read). */
  readonly readBuffers: ReadBuffers;
  private readonly rescans = new Set<NodeJS.Timeout>();
  /** Folders whose rescans are pending: a folder reported twice (a root that appears is also chokidar's addDir) is listed once per delay. */
  private readonly rescanning = new Set<string>();
  /** Folders to list again because a listing failed for lack of descriptors (one timer each). */
  private readonly starvedRescans = new Set<string>();
  /** One per watch root: notices a root that appears (missing at start) or vanishes and comes back. */
  private presences: RootPresence[] = [];

  constructor(options: TailerOptions) {
    super();
    this.options = resolveTailerOptions(options);
    this.readBuffers = new ReadBuffers(FINGERPRINT_BYTES + MIN_READ_BYTES, FINGERPRINT_BYTES + this.options.readChunkBytes);
    this.warnings = new RateLimitedLog(this.options.logger, { intervalMs: this.options.warnIntervalMs, now: this.options.now });
    this.slots = new DescriptorSlots(this.options.maxOpenFiles, () => this.closeIdle());
  }

  /** Descriptors open or being opened now (at most `maxOpenFiles`), and reads waiting for one. */
  descriptors(): { open: number; waiting: number } {
    return { open: this.slots.inUse, waiting: this.slots.waiters };
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
    await this.resolveRoots();
    const existing = await Promise.all(this.options.paths.map((p) => stat(p).then(() => true, () => false)));
    // Missing roots too: chokidar emits no 'ready' for an empty list, and watches a missing root
    // whose parent exists; RootPresence adds the others when they appear.
    const watcher = watch([...this.options.paths], {
      persistent: true,
      ignoreInitial: false,
      alwaysStat: true,
      followSymlinks: this.options.followSymlinks,
      ignored: (p: string, stats?: Stats) => stats?.isFile() === true && !p.endsWith('.jsonl') && !explicit.has(p),
    });
    this.watcher = watcher;
    watcher.on('add', (p, stats) => this.onAdd(p, stats));
    watcher.on('addDir', (p) => this.onAddDir(p));
    watcher.on('change', (p, stats) => this.onChange(p, stats));
    watcher.on('raw', (event, path, details) => this.onRaw(event, path, details));
    watcher.on('unlink', (p) => this.onUnlink(p));
    watcher.on('error', (err) => this.onWatcherError(err));
    await new Promise<void>((resolveReady) => watcher.once('ready', () => resolveReady()));
    this.presences = this.options.paths.map(
      (root, i) => new RootPresence(root, existing[i] === true, { appeared: (r) => this.onRootAppeared(r), vanished: (r) => this.onRootVanished(r) }, this.options.logger),
    );
    await Promise.all(this.presences.map((p) => p.start()));
    // chokidar leaves out files it cannot watch (no read permission): list the roots ourselves
    // so such a file is registered, reported once, and read when it becomes readable.
    for (const root of this.options.paths) await this.rescan(root);
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

  /**
   * What the tailer has read of `file`: its inode and the bytes it read last (undefined: not
   * read yet, or not tailed). A read of it later checks both (`readTranscriptPrefix`): a file
   * replaced, or truncated and rewritten in place, is not the one read.
   */
  readIdentityOf(file: string): ReadIdentity | undefined {
    const st = this.files.get(file);
    if (st?.ino === undefined) return undefined;
    return { ino: st.ino, tail: { at: st.readPos, bytes: Buffer.from(st.tail.subarray(0, st.tailLength)) } };
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
    for (const t of this.rescans) clearTimeout(t);
    this.rescans.clear();
    this.rescanning.clear();
    this.starvedRescans.clear();
    this.slots.close(); // reads waiting for a descriptor end now, without opening one
    await Promise.all(this.presences.map((p) => p.close()));
    try {
      await this.watcher?.close();
    } catch (err) {
      this.options.logger.warn({ err: describeError(err) }, 'watcher close failed');
    }
    await this.settle();
    await Promise.allSettled([...this.openOrder].map((st) => this.closeHandle(st)));
    this.warnings.flush();
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
      if (existing.skipped && stats?.isFile() === true) existing.skipped = undefined; // replaced by a regular file
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
      sessionId: this.claimSessionId(p),
      decoder,
      lineErrors,
      readPos: 0,
      ino: undefined,
      tail: Buffer.alloc(FINGERPRINT_BYTES),
      tailLength: 0,
      live,
      announced: false,
      gone: false,
      reading: undefined,
      again: false,
      eventSeen: false,
      recheck: undefined,
      rawQueued: false,
      seen: undefined,
      removal: undefined,
      fh: undefined,
      busy: false,
      starvedRetryMs: STARVED_RETRY_MS,
      skipped: undefined,
      retry: undefined,
      retryMs: this.options.unreadableRetryMs,
      unreadable: false,
    };
    this.files.set(p, st);
    // chokidar's stats (lstat-like for links it does not follow): never open what is not a file.
    if (stats && !stats.isFile() && !stats.isSymbolicLink()) {
      this.skip(st, `not a regular file (${kindOf(stats)})`);
      return;
    }
    if (live) this.requestRead(st, true);
    else this.options.logger.debug({ file: p }, 'file outside the live window: registered, not read');
  }

  /** The session id of a new file: unique per path (see session-id.ts). */
  private claimSessionId(file: string): string {
    const root = this.options.paths.filter((r) => file === r || file.startsWith(r.endsWith(sep) ? r : r + sep)).sort((a, b) => b.length - a.length)[0] ?? file;
    let id = sessionIdFor(file, root);
    const owner = this.idOwners.get(id);
    if (owner !== undefined && owner !== file) {
      // The same agent id under two paths (a copied transcript): the path keeps them apart.
      id = pathSessionId(file, root);
      if (this.idOwners.has(id)) id = file;
      this.options.logger.warn({ file, sessionId: id, sameIdAs: owner }, 'agent session id already used by another transcript: using the path instead');
    }
    this.idOwners.set(id, file);
    return id;
  }

  /**
   * A folder appeared after the first scan: chokidar may start watching it only after files
   * were written into it, so list it now and again shortly after, and pick up what it missed.
   */
  private onAddDir(dir: string): void {
    if (!this.active || !this.initialScanDone || this.rescanning.has(dir)) return;
    this.rescanning.add(dir);
    NEW_DIR_RESCANS_MS.forEach((delay, k) => {
      const t = setTimeout(() => {
        this.rescans.delete(t);
        if (k === NEW_DIR_RESCANS_MS.length - 1) this.rescanning.delete(dir);
        void this.rescan(dir);
      }, delay);
      this.rescans.add(t);
    });
  }

  /**
   * Resolve every root through symlinks (a missing one stands for itself) and keep the result
   * unless a newer resolution started meanwhile. Returns what this resolution found.
   */
  private async resolveRoots(): Promise<string[]> {
    const n = ++this.rootsResolved;
    const reals = await Promise.all(this.options.paths.map((p) => realpath(p).catch(() => p)));
    if (n === this.rootsResolved) this.rootReals = reals;
    return reals;
  }

  /** A watch root exists now: watch it and list it (now and shortly after, like a new folder). */
  private onRootAppeared(root: string): void {
    if (!this.active) return;
    this.options.logger.info({ path: root }, 'watch path appeared: watching it');
    // Resolved before the root is watched or listed: a file read earlier would be checked
    // against the root's old (or unresolved) real path and refused as a link out of the roots.
    void this.resolveRoots().then(() => {
      if (!this.active) return;
      this.watcher?.add(root);
      this.onAddDir(root); // listed now and shortly after (the first scan lists it if still to come)
    });
  }

  /** A watch root is gone: stop watching it (chokidar would not see it come back) and check its files. */
  private onRootVanished(root: string): void {
    if (!this.active) return;
    this.options.logger.warn({ path: root }, 'watch path vanished: watching for it to come back');
    void this.watcher?.unwatch(root);
    const prefix = root.endsWith(sep) ? root : root + sep;
    for (const st of this.files.values()) if (st.file === root || st.file.startsWith(prefix)) this.scheduleRemovalCheck(st);
  }

  private async rescan(dir: string): Promise<void> {
    if (!this.active) return;
    let entries;
    try {
      if (!(await stat(dir)).isDirectory()) return;
      entries = await readdir(dir, { withFileTypes: true, recursive: true });
    } catch (err) {
      if (isStarved(err)) this.rescanLater(dir, err);
      else if (!isMissing(err)) this.options.logger.debug({ dir, err: describeError(err) }, 'new folder not listed');
      return;
    }
    this.options.logger.debug({ dir, entries: entries.length }, 'folder listed');
    for (const e of entries) {
      if (!this.active) return;
      if (!e.isFile() || !e.name.endsWith('.jsonl')) continue;
      const p = join(e.parentPath, e.name);
      const known = this.files.get(p);
      if (known) {
        if (known.live && this.initialScanDone) this.requestRead(known, true);
        continue;
      }
      const stats = await stat(p).catch(() => undefined);
      if (stats && this.active && !this.files.has(p)) this.onAdd(p, stats);
    }
  }

  /**
   * chokidar failed: logged. If it could not list a folder for lack of descriptors, the files
   * it would have reported are found by listing the roots again later (it does not retry).
   */
  private onWatcherError(err: unknown): void {
    this.fail(err instanceof Error ? err : new Error(String(err)));
    if (!isStarved(err)) return;
    for (const root of this.options.paths) this.rescanLater(root, err);
  }

  /** A folder could not be listed for lack of descriptors: list it again after a while. */
  private rescanLater(dir: string, err: unknown): void {
    if (!this.active || this.starvedRescans.has(dir)) return;
    this.warnings.warn('\u0000starved-dir', { dir, code: errnoOf(err), descriptors: this.slots.inUse, retryMs: STARVED_RESCAN_MS }, 'out of file descriptors: folder listed again later');
    this.starvedRescans.add(dir);
    const t = setTimeout(() => {
      this.rescans.delete(t);
      this.starvedRescans.delete(dir);
      void this.rescan(dir);
    }, STARVED_RESCAN_MS);
    this.rescans.add(t);
  }

  private onChange(p: string, stats: Stats | undefined): void {
    if (!this.active) return;
    const st = this.files.get(p);
    if (!st) {
      this.onAdd(p, undefined);
      return;
    }
    // A raw event had the bytes read already: chokidar's own report of them (it stats first)
    // would cost a second read pass per append for nothing.
    if (st.live && !st.reading && stats && st.seen && stats.ino === st.seen.ino && stats.size === st.seen.size && stats.mtimeMs === st.seen.mtimeMs && stats.size === st.readPos) return;
    this.activate(st);
  }

  /**
   * chokidar's raw fs.watch events, which it does not throttle: its `change` comes at most once
   * per 50 ms per file, so an append right after another would wait for the re-check. A live
   * file's modification is read at once instead; the events of one append (the file's watcher
   * and its folder's) are read in one pass, in the loop's next check phase. Anything else (new,
   * dormant, renamed files) is left to chokidar's events.
   */
  private onRaw(event: string, evPath: string, details: unknown): void {
    if (!this.active || event !== 'change') return;
    const watched = (details as { watchedPath?: unknown } | undefined)?.watchedPath;
    if (typeof watched !== 'string') return;
    // a file's own watcher names the file; its folder's names the entry within it
    const st = this.files.get(watched) ?? (evPath ? this.files.get(join(watched, evPath)) : undefined);
    if (!st || !st.live || st.rawQueued) return;
    st.rawQueued = true;
    setImmediate(() => {
      st.rawQueued = false;
      this.requestRead(st, true);
    });
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
    void this.closeHandle(st);
    st.decoder.reset(0);
    st.lineErrors.length = 0;
    st.readPos = 0;
    st.ino = undefined;
    st.seen = undefined;
    st.tailLength = 0;
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
    if (!this.active || st.gone || !st.live || st.skipped !== undefined || st.retry !== undefined) return;
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
        if (isStarved(err)) {
          this.retryStarved(st, err);
          break;
        }
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

  /**
   * Open a transcript without ever blocking: O_NONBLOCK (a FIFO opens at once instead of
   * waiting for a writer), then fstat on the descriptor — only a regular file is kept.
   */
  private async openRegular(st: FileState): Promise<Opened> {
    if (!this.options.followSymlinks) {
      const real = await realpath(st.file);
      const inside = (roots: readonly string[]): boolean => roots.some((r) => real === r || real.startsWith(r.endsWith(sep) ? r : r + sep));
      // A root that is a symlink may have been re-pointed since it was resolved: resolve again before refusing.
      if (!inside(this.rootReals) && !inside(await this.resolveRoots())) return { skip: `a symlink leading out of the watch roots (to ${real}); set followSymlinks to read it` };
    }
    let fh: FileHandle;
    try {
      fh = await open(st.file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    } catch (err) {
      // A Unix socket cannot be opened at all.
      if ((err as { code?: unknown }).code === 'ENXIO') return { skip: 'not a regular file (socket)' };
      throw err;
    }
    let s: Stats;
    try {
      s = await fh.stat();
    } catch (err) {
      await fh.close();
      throw err;
    }
    if (!s.isFile()) {
      await fh.close();
      return { skip: `not a regular file (${kindOf(s)})` };
    }
    return { fh, ino: s.ino };
  }

  /** The file's descriptor, opened (and checked) when needed; undefined when skipped or gone. */
  private async handleOf(st: FileState): Promise<FileHandle | undefined> {
    if (st.fh) {
      this.openOrder.delete(st);
      this.openOrder.add(st);
      return st.fh;
    }
    // A slot first: the descriptor opened below is one of at most maxOpenFiles.
    const slot = this.slots.acquire();
    if (slot !== true && !(await slot)) return undefined; // closing
    if (!this.active || st.gone) {
      this.slots.release();
      return undefined;
    }
    let opened: Opened;
    try {
      opened = await this.openRegular(st);
    } catch (err) {
      this.slots.release();
      this.openFailed(st, err);
      return undefined;
    }
    if ('skip' in opened) {
      this.slots.release();
      this.skip(st, opened.skip);
      return undefined;
    }
    st.starvedRetryMs = STARVED_RETRY_MS;
    if (st.unreadable) {
      st.unreadable = false;
      st.retryMs = this.options.unreadableRetryMs;
      this.options.logger.info({ file: st.file, sessionId: st.sessionId }, 'transcript readable now');
    }
    if (st.ino !== undefined && opened.ino !== st.ino) this.restart(st, 'rotated');
    st.ino = opened.ino;
    st.fh = opened.fh;
    this.openOrder.add(st);
    return st.fh;
  }

  /**
   * Opening failed: a file gone is checked for removal, one not readable (EACCES) or opened
   * while the process is out of descriptors (EMFILE) is read again later; anything else throws.
   */
  private openFailed(st: FileState, err: unknown): void {
    if (isMissing(err)) {
      this.fail(new ContextdError(ErrorCode.TAIL_FILE_GONE, `transcript file disappeared: ${st.file}`, { file: st.file, sessionId: st.sessionId }), st);
      this.scheduleRemovalCheck(st);
      return;
    }
    const code = errnoOf(err);
    if (code === 'EACCES' || code === 'EPERM') return this.retryLater(st, err);
    if (isStarved(err)) return this.retryStarved(st, err);
    throw err;
  }

  /**
   * Close the least recently read descriptor no read is using (its slot goes to a file waiting
   * for one once the close is done). False when every open descriptor is in use.
   */
  private closeIdle(): boolean {
    for (const st of this.openOrder) {
      if (st.busy) continue;
      void this.closeHandle(st);
      return true;
    }
    return false;
  }

  /** Close the descriptor (if any) and give its slot back once it is closed. */
  private async closeHandle(st: FileState): Promise<void> {
    const fh = st.fh;
    st.fh = undefined;
    this.openOrder.delete(st);
    if (!fh) return;
    try {
      await fh.close();
    } catch (err) {
      this.options.logger.debug({ file: st.file, err: describeError(err) }, 'close failed');
    } finally {
      this.slots.release();
    }
  }

  /**
   * The process is out of descriptors (EMFILE, ENFILE: held by something else than the tailer's
   * own, which are bounded): close the idle ones kept, say so (rate-limited, not per file), and
   * read this file again after a back-off that doubles up to MAX_STARVED_RETRY_MS.
   */
  private retryStarved(st: FileState, err: unknown): void {
    this.warnings.warn('\u0000starved', { file: st.file, code: errnoOf(err), descriptors: this.slots.inUse, retryMs: st.starvedRetryMs }, 'out of file descriptors: transcript read again later');
    for (const idle of [...this.openOrder]) if (!idle.busy) void this.closeHandle(idle);
    if (this.readAgainIn(st, st.starvedRetryMs)) st.starvedRetryMs = Math.min(MAX_STARVED_RETRY_MS, st.starvedRetryMs * 2);
  }

  /** Opening failed for lack of permission: say so once, and try again with back-off. */
  private retryLater(st: FileState, err: unknown): void {
    if (!st.unreadable) {
      st.unreadable = true;
      this.options.logger.warn({ file: st.file, sessionId: st.sessionId, code: errnoOf(err), retryMs: st.retryMs }, 'transcript cannot be opened; retrying until it can');
    }
    if (this.readAgainIn(st, st.retryMs)) st.retryMs = Math.min(MAX_RETRY_MS, st.retryMs * 2);
  }

  /** Read `st` again in `delayMs`; false (nothing scheduled) when a retry is due already or the tailer stops. */
  private readAgainIn(st: FileState, delayMs: number): boolean {
    if (st.retry || !this.active) return false;
    st.retry = setTimeout(() => {
      st.retry = undefined;
      this.requestRead(st, true);
    }, delayMs);
    return true;
  }

  /** Never read this path (it is not a regular file, or leads out of the roots); warn once. */
  private skip(st: FileState, why: string): void {
    st.skipped = why;
    void this.closeHandle(st);
    this.options.logger.warn({ file: st.file, reason: why }, 'skipping path: not read');
  }

  /**
   * Read from the stored offset to EOF. Returns the bytes consumed. The descriptor is in use
   * meanwhile; once the read ends it may be closed for a file waiting for a slot.
   */
  private async readToEof(st: FileState): Promise<number> {
    st.busy = true;
    try {
      return await this.readOpen(st);
    } finally {
      st.busy = false;
      this.slots.serveWaiters();
    }
  }

  /** `readToEof`'s work, with the descriptor marked busy. */
  private async readOpen(st: FileState): Promise<number> {
    const fh = await this.handleOf(st);
    if (!fh) return 0;
    // The path, not the descriptor: a rotated file has a new inode under the same name.
    let s: Stats;
    try {
      s = await stat(st.file);
    } catch (err) {
      if (!isMissing(err)) throw err;
      await this.closeHandle(st);
      this.scheduleRemovalCheck(st);
      return 0;
    }
    if (s.ino !== st.ino) {
      await this.closeHandle(st);
      return this.readOpen(st); // reopens, sees the new inode, restarts
    }
    if (s.size < st.readPos) this.restart(st, 'truncated');
    st.seen = { ino: s.ino, size: s.size, mtimeMs: s.mtimeMs };
    let consumed = 0;
    let size = s.size;
    let first = true;
    while (this.active && !st.gone) {
      const wait = this.options.gate?.(st.file);
      if (wait) {
        // Held back (the consumer has a backlog): the descriptor is idle meanwhile, and may serve
        // a file waiting for a slot. If it was closed, the next pass reopens and checks the file.
        st.busy = false;
        this.slots.serveWaiters();
        await wait;
        st.busy = true;
        if (st.fh !== fh) {
          st.again = true;
          break;
        }
      }
      if (!this.active || st.gone) break;
      // The first read starts FINGERPRINT_BYTES early: the bytes before the offset must still be ours.
      const lead = first ? Math.min(st.tailLength, st.readPos) : 0;
      const want = Math.min(this.options.readChunkBytes, Math.max(MIN_READ_BYTES, size - st.readPos));
      const borrowed = this.readBuffers.take(lead + want);
      const buf = await borrowed.buf;
      let n: number;
      try {
        const { bytesRead } = await fh.read(buf, 0, lead + want, st.readPos - lead);
        if (first) {
          first = false;
          if (lead > 0 && (bytesRead < lead || !buf.subarray(0, lead).equals(st.tail.subarray(st.tailLength - lead, st.tailLength)))) {
            this.restart(st, 'truncated');
            continue;
          }
        }
        n = bytesRead - lead;
        if (n <= 0) break;
        const chunk = buf.subarray(lead, bytesRead);
        st.readPos += n;
        size = Math.max(size, st.readPos);
        consumed += n;
        keepTail(st, chunk);
        // Decoded before the buffer goes back: the decoder copies every byte it keeps.
        this.deliver(st, chunk);
      } finally {
        borrowed.pool.give(buf);
      }
      if (n < want) break; // at EOF as of this read; the re-check catches what comes next
    }
    return consumed;
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
      this.warnings.warn(`${st.file}\u0000line:${e.kind}`, { file: st.file, offset: e.offset, kind: e.kind, bytes: e.bytes }, 'transcript line skipped');
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
    st.tailLength = 0;
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
    void this.closeHandle(st);
    this.files.delete(st.file);
    if (this.idOwners.get(st.sessionId) === st.file) this.idOwners.delete(st.sessionId);
    this.warnings.forget(`${st.file}\u0000`);
    this.options.logger.info({ file: st.file }, 'transcript removed');
    this.emit('removed', { file: st.file, sessionId: st.sessionId });
  }

  private clearTimers(st: FileState): void {
    if (st.recheck) clearTimeout(st.recheck);
    if (st.removal) clearTimeout(st.removal);
    if (st.retry) clearTimeout(st.retry);
    st.recheck = undefined;
    st.removal = undefined;
    st.retry = undefined;
  }

  /** Log a non-fatal error once (rate-limited per file and code), and emit it for listeners. */
  private fail(err: Error, st?: FileState): void {
    const code = (err as Partial<ContextdError>).code;
    this.warnings.warn(`${st?.file ?? ''}\u0000error:${code ?? ''}`, { err: describeError(err), code, file: st?.file }, 'tailer error');
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }
}

/** Remember the last FINGERPRINT_BYTES bytes read, in the file's own fixed buffer. */
function keepTail(st: FileState, chunk: Buffer): void {
  if (chunk.length >= FINGERPRINT_BYTES) {
    chunk.copy(st.tail, 0, chunk.length - FINGERPRINT_BYTES);
    st.tailLength = FINGERPRINT_BYTES;
    return;
  }
  const kept = Math.min(st.tailLength, FINGERPRINT_BYTES - chunk.length);
  st.tail.copy(st.tail, 0, st.tailLength - kept, st.tailLength); // Buffer#copy allows overlap
  chunk.copy(st.tail, kept);
  st.tailLength = kept + chunk.length;
}

function kindOf(s: Stats): string {
  if (s.isFIFO()) return 'FIFO';
  if (s.isSocket()) return 'socket';
  if (s.isCharacterDevice()) return 'character device';
  if (s.isBlockDevice()) return 'block device';
  if (s.isDirectory()) return 'directory';
  if (s.isSymbolicLink()) return 'symlink';
  return 'special file';
}
