/**
 * Offline harvest of transcript files: read each through the ingest decoder, rebuild the
 * session's message list, and hand it to harvestSession. One bad file never stops the run.
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { TranscriptDecoder, readTranscriptPrefix, type ReadIdentity } from '../ingest/decoder.js';
import type { TranscriptFormat } from '../ingest/types.js';
import { sessionIdForFile } from '../ingest/session-id.js';
import type { Message, SessionMeta, TranscriptEvent } from '../model/messages.js';
import type { Outcome } from '../store/templates.js';
import { ContextdError, ErrorCode, describeError } from '../util/errors.js';
import { harvestSession, type HarvestDeps, type HarvestResult } from './harvest.js';
import { redactSync } from './redact.js';

/** A transcript rebuilt for harvest: every message that stayed on the live branch. */
export interface LoadedSession {
  readonly sessionId: string;
  readonly messages: Message[];
  readonly meta: SessionMeta;
  /** Turn ends seen (the format's own end-of-turn markers). */
  readonly turnEnds: number;
}

/**
 * A session's history for harvest, built incrementally from its events (the daemon keeps one
 * per live session, so a finished session is harvested without reading its file again).
 * Rewinds (`truncate`) drop the abandoned branch; the agent's own compactions (`reset`) are
 * ignored so the whole history is harvested.
 */
export class SessionHistory {
  private list: Message[] = [];
  private metaState: SessionMeta = {};
  private turnEndCount = 0;

  /** Fold more events in. */
  push(events: Iterable<TranscriptEvent>): void {
    for (const e of events) {
      if (e.type === 'message') this.list.push(e.message);
      else if (e.type === 'meta') this.metaState = { ...this.metaState, ...Object.fromEntries(Object.entries(e.meta).filter(([, v]) => v !== undefined)) };
      else if (e.type === 'truncate') {
        if (e.keepThroughId === null) this.list = [];
        else {
          const i = this.list.findIndex((m) => m.id === e.keepThroughId);
          if (i >= 0) this.list = this.list.slice(0, i + 1);
        }
      } else if (e.type === 'turn-end') this.turnEndCount++;
    }
  }

  /** Start over (the transcript was rewritten and is read again from 0). */
  clear(): void {
    this.list = [];
    this.metaState = {};
    this.turnEndCount = 0;
  }

  /** The session as harvest takes it (a snapshot: later events do not change it). */
  snapshot(sessionId: string): LoadedSession {
    return { sessionId, messages: [...this.list], meta: { ...this.metaState }, turnEnds: this.turnEndCount };
  }
}

/** Messages of a session from its events (see SessionHistory). */
export function sessionFromEvents(sessionId: string, events: readonly TranscriptEvent[]): LoadedSession {
  const h = new SessionHistory();
  h.push(events);
  return h.snapshot(sessionId);
}

/**
 * Read one finished transcript file into a session (id: the file name without `.jsonl`).
 * The file is read in one piece and pushed through the ingest decoder (cheaper than a
 * stream for the many small files of a bulk harvest); the same errors as
 * `readTranscriptFile`: NOTHING_READ when no line parses, FORMAT_UNKNOWN when no format fits.
 */
export async function loadTranscript(path: string): Promise<LoadedSession> {
  const bytes = await readFile(path);
  const decoder = new TranscriptDecoder();
  const events = decoder.push(bytes);
  if (bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a) events.push(...decoder.push(Buffer.from('\n')));
  const c = decoder.counts;
  if (c.lines - c.malformedLines - c.oversizedLines <= 0) {
    throw new ContextdError(ErrorCode.NOTHING_READ, `no transcript line could be parsed in ${path}`, { path, bytes: bytes.length, ...c });
  }
  if (decoder.format === undefined) throw new ContextdError(ErrorCode.FORMAT_UNKNOWN, `transcript format not recognized in ${path}`, { path, bytes: bytes.length, ...c });
  return sessionFromEvents(sessionIdForFile(path), events);
}

/**
 * A live session's history for harvest, read back from its transcript: the lines up to
 * `endOffset` (the tailer's position), decoded as `format`, so the result is what the tailer
 * applied, compacted-away originals included. The daemon keeps no copy of a tailed session's
 * messages; the transcript on disk is that copy. Nothing read yet (offset 0) is an empty
 * session; an unreadable file throws the tailer's own coded errors (FILE_*, NOTHING_READ), and a
 * file replaced or rewritten since the tailer read it (`expect`, what it read) FILE_REPLACED: the
 * tailer resets the session when it sees the new file, which is then a session of its own.
 */
export async function loadTranscriptPrefix(path: string, sessionId: string, format: TranscriptFormat, endOffset: number, maxLineBytes?: number, expect?: ReadIdentity): Promise<LoadedSession> {
  if (endOffset <= 0) return sessionFromEvents(sessionId, []);
  const read = await readTranscriptPrefix(path, format, endOffset, maxLineBytes, expect);
  return sessionFromEvents(sessionId, read.events);
}

/** Expand files and directories (recursively, `*.jsonl`) into a sorted file list. */
export async function listTranscriptFiles(paths: readonly string[]): Promise<string[]> {
  const out = new Set<string>();
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true });
    for (const e of entries) {
      const p = join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile() && e.name.endsWith('.jsonl')) out.add(p);
    }
  };
  for (const p of paths) {
    const s = await stat(p);
    if (s.isDirectory()) await walk(p);
    else out.add(p);
  }
  return [...out].sort();
}

/** Harvest one transcript file. */
export async function harvestFile(path: string, deps: HarvestDeps, outcome: Outcome = 'unknown'): Promise<HarvestResult> {
  const s = await loadTranscript(path);
  return harvestSession({ sessionId: s.sessionId, messages: s.messages, meta: { repo: s.meta.repo, cwd: s.meta.cwd, model: s.meta.model }, outcome, source: path }, deps);
}

export interface HarvestProgress {
  readonly done: number;
  readonly total: number;
  readonly file: string;
  readonly result?: HarvestResult;
  readonly error?: string;
}

export interface HarvestFilesSummary {
  readonly files: number;
  readonly harvested: number;
  /** Of the harvested sessions, how many joined an existing template. */
  readonly merged: number;
  readonly skipped: number;
  readonly skippedReasons: Readonly<Record<string, number>>;
  readonly failed: { file: string; error: string }[];
  readonly filesPerSecond: number;
  readonly elapsedMs: number;
  readonly templates: string[];
}

/** Harvest many files or directories; failures are collected (redacted), never thrown. */
export async function harvestFiles(paths: readonly string[], deps: HarvestDeps, onProgress?: (p: HarvestProgress) => void): Promise<HarvestFilesSummary> {
  const log = deps.logger.child({ component: 'harvest' });
  const started = performance.now();
  const failed: { file: string; error: string }[] = [];
  const files: string[] = [];
  for (const p of paths) {
    try {
      files.push(...(await listTranscriptFiles([p])));
    } catch (err) {
      failed.push({ file: redactSync(p).text, error: redactSync(describeError(err)).text });
    }
  }
  let harvested = 0;
  let merged = 0;
  let skipped = 0;
  const reasons: Record<string, number> = {};
  const templates = new Set<string>();
  for (let i = 0; i < files.length; i++) {
    const file = files[i] ?? '';
    try {
      const result = await harvestFile(file, deps);
      if (result.skipped) {
        skipped++;
        reasons[result.skipped] = (reasons[result.skipped] ?? 0) + 1;
      } else {
        harvested++;
        if (result.merged) merged++;
      }
      if (result.templateId) templates.add(result.templateId);
      onProgress?.({ done: i + 1, total: files.length, file, result });
    } catch (err) {
      const error = redactSync(describeError(err)).text;
      failed.push({ file: redactSync(file).text, error });
      log.warn({ file: redactSync(file).text, error }, 'transcript not harvested');
      onProgress?.({ done: i + 1, total: files.length, file, error });
    }
  }
  const elapsedMs = performance.now() - started;
  return {
    files: files.length,
    harvested,
    merged,
    skipped,
    skippedReasons: reasons,
    failed,
    filesPerSecond: files.length === 0 ? 0 : Math.round((files.length / Math.max(elapsedMs, 1)) * 1000 * 10) / 10,
    elapsedMs: Math.round(elapsedMs),
    templates: [...templates].sort(),
  };
}
