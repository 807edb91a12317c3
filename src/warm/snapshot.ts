/**
 * Writing the warm snapshot (see snapshot-format.ts) from the template store. The daemon
 * refreshes it after every harvest and outcome, and `contextd warm harvest|import|delete`
 * after theirs, so the hook's daemon-down bootstrap reads one JSON file instead of loading
 * SQLite. Large stores get no snapshot (the hook reads the store then): past a few hundred
 * templates, parsing the JSON would cost the hook as much as the store does.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { KnowledgeItem, TemplateStore } from '../store/templates.js';
import { writeFileAtomicSync } from '../util/atomic-write.js';
import type { Logger } from '../util/logger.js';
import {
  WARM_SNAPSHOT_FILE,
  WARM_SNAPSHOT_FORMAT,
  WARM_SNAPSHOT_VERSION,
  type SnapshotDetail,
  type SnapshotSearchText,
  type SnapshotTemplate,
  type SnapshotTemplateHead,
  type Unscored,
  type WarmSnapshotFile,
  type WarmSnapshotHeader,
} from './snapshot-format.js';
import { fts5Tokens } from './snapshot-source.js';

/** Most templates a snapshot holds; a larger store gets none. */
export const MAX_SNAPSHOT_TEMPLATES = 500;
/** Largest snapshot file written; a larger one is not written. */
export const MAX_SNAPSHOT_BYTES = 2 * 1024 * 1024;

function searchText(body: string): SnapshotSearchText {
  const tokens = fts5Tokens(body);
  const tf: Record<string, number> = Object.create(null) as Record<string, number>;
  for (const t of tokens) tf[t] = (tf[t] ?? 0) + 1;
  return { length: tokens.length, tf, body };
}

/** Everything a bootstrap reads from `store`, as one snapshot document. */
export function buildWarmSnapshot(store: TemplateStore, now: number = Date.now()): WarmSnapshotFile {
  const knowledge = new Map<number, Unscored<KnowledgeItem>>();
  const keep = (items: readonly KnowledgeItem[]): number[] =>
    items.map(({ confidence: _c, ...k }) => {
      knowledge.set(k.id, k);
      return k.id;
    });
  const templates: SnapshotTemplate[] = [];
  for (const summary of store.list()) {
    const t = store.get(summary.id, now);
    if (!t) continue;
    const { knowledge: linked, items, ...rest } = t;
    const unscored = items.map(({ confidence: _c, ...item }) => item);
    templates.push({ ...rest, items: unscored, knowledgeIds: keep(linked), search: searchText(store.searchBody(t.id) ?? '') });
  }
  const repoKnowledge: Record<string, number[]> = {};
  for (const repo of store.knowledgeRepos()) repoKnowledge[repo] = keep(store.knowledgeFor([], repo, now));
  return {
    format: WARM_SNAPSHOT_FORMAT,
    version: WARM_SNAPSHOT_VERSION,
    writtenAt: now,
    halfLifeMs: store.confidenceHalfLifeMs,
    templates,
    knowledge: [...knowledge.values()],
    repoKnowledge,
    patterns: store.allPromotedPatterns(),
  };
}

/** The file text of a snapshot: its header line, then one detail line per template, located by byte range in the header (snapshot-format.ts). */
export function encodeWarmSnapshot(file: WarmSnapshotFile): string {
  const lines: string[] = [];
  let offset = 0;
  const templates = file.templates.map(({ items, search: { body, ...search }, ...rest }): SnapshotTemplateHead => {
    // JSON.stringify escapes every newline inside strings: one detail per line.
    const line = JSON.stringify({ items, body } satisfies SnapshotDetail);
    const length = Buffer.byteLength(line, 'utf8');
    const head = { ...rest, search, detail: [offset, length] as const };
    lines.push(line);
    offset += length + 1;
    return head;
  });
  const header: WarmSnapshotHeader = { ...file, templates };
  return `${[JSON.stringify(header), ...lines].join('\n')}\n`;
}

/** Size limits of a snapshot (defaults MAX_SNAPSHOT_TEMPLATES, MAX_SNAPSHOT_BYTES). */
export interface SnapshotLimits {
  readonly maxTemplates?: number;
  readonly maxBytes?: number;
}

export interface SnapshotWriteResult {
  readonly written: boolean;
  readonly templates: number;
  readonly bytes: number;
  /** Why no snapshot was written (the old one, if any, was removed). */
  readonly skipped?: string;
}

/** Path of the snapshot in a state folder. */
export function warmSnapshotPath(stateDir: string): string {
  return join(stateDir, WARM_SNAPSHOT_FILE);
}

/**
 * Write the snapshot of `store` into `stateDir` (atomically, owner-only). When the store is too
 * large for one, any older snapshot is removed, so the hook never answers from stale data.
 */
export function writeWarmSnapshot(store: TemplateStore, stateDir: string, now: number = Date.now(), limits: SnapshotLimits = {}): SnapshotWriteResult {
  const path = warmSnapshotPath(stateDir);
  const maxTemplates = limits.maxTemplates ?? MAX_SNAPSHOT_TEMPLATES;
  const maxBytes = limits.maxBytes ?? MAX_SNAPSHOT_BYTES;
  const count = store.count();
  if (count > maxTemplates) {
    rmSync(path, { force: true });
    return { written: false, templates: count, bytes: 0, skipped: `${count} templates, over ${maxTemplates}` };
  }
  const text = encodeWarmSnapshot(buildWarmSnapshot(store, now));
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) {
    rmSync(path, { force: true });
    return { written: false, templates: count, bytes, skipped: `${bytes} bytes, over ${maxBytes}` };
  }
  writeFileAtomicSync(path, text, 0o600);
  return { written: true, templates: count, bytes };
}

/**
 * Refresh the snapshot after templates changed; never throws. When writing fails the old
 * snapshot is removed (the hook then reads the store), and the failure is logged.
 */
export function refreshWarmSnapshot(store: TemplateStore, stateDir: string, logger: Logger, now?: number): SnapshotWriteResult | undefined {
  const log = logger.child({ component: 'warm' });
  try {
    const r = writeWarmSnapshot(store, stateDir, now);
    if (r.skipped) log.info({ skipped: r.skipped }, 'warm snapshot not written; hooks read the template store');
    else log.debug({ templates: r.templates, bytes: r.bytes }, 'warm snapshot written');
    return r;
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'warm snapshot not written; hooks read the template store');
    try {
      rmSync(warmSnapshotPath(stateDir), { force: true });
    } catch {
      // Removing failed too: the hook refuses nothing it can parse, so say so loudly.
      log.error({ path: warmSnapshotPath(stateDir) }, 'stale warm snapshot could not be removed');
    }
    return undefined;
  }
}

/** Default longest wait between a template change and the snapshot write that holds it. */
export const DEFAULT_SNAPSHOT_DELAY_MS = 2000;

/**
 * The daemon's snapshot writes, coalesced: the first change after a write starts a timer of
 * `delayMs`, and that one write holds every change made until it fires, so a burst of harvests
 * costs one rewrite and none runs on a harvest's own path. `close()` writes what is pending
 * (shutdown, before the store closes); `delayMs` 0 writes at each change.
 */
export class WarmSnapshotWriter {
  private timer: NodeJS.Timeout | undefined;
  private pending = 0;
  private closed = false;

  constructor(
    private readonly store: TemplateStore,
    private readonly stateDir: string,
    private readonly logger: Logger,
    private readonly delayMs: number = DEFAULT_SNAPSHOT_DELAY_MS,
    private readonly now?: () => number,
  ) {}

  /** Templates changed: the snapshot is rewritten within `delayMs`. */
  request(): void {
    if (this.closed) return;
    this.pending++;
    if (this.delayMs === 0) {
      this.flush();
      return;
    }
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, this.delayMs);
    this.timer.unref();
  }

  /** Write now when a change is pending (undefined when none was, or the write failed). */
  flush(): SnapshotWriteResult | undefined {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending === 0) return undefined;
    const changes = this.pending;
    this.pending = 0;
    const r = refreshWarmSnapshot(this.store, this.stateDir, this.logger, this.now?.());
    this.logger.child({ component: 'warm' }).debug({ changes }, 'warm snapshot changes written together');
    return r;
  }

  /** Writes what is pending; later changes are not written (the store is closing). */
  close(): void {
    this.flush();
    this.closed = true;
  }
}
