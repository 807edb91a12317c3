/**
 * The warm snapshot: a JSON copy of what a bootstrap reads from the template store (templates
 * with their items, knowledge, promoted user patterns, and each template's search terms),
 * written by the daemon and `contextd warm` whenever templates change, so `contextd hook` can
 * bootstrap a session while the daemon is down without loading SQLite. The store stays the
 * truth: a missing, unreadable or foreign snapshot only sends the hook back to the store.
 *
 * On disk (version 2) it is JSON lines: line 1 is the {@link WarmSnapshotHeader} — everything a
 * search and a selection read (each template's fields and term counts, knowledge, patterns) —
 * and each later line one template's {@link SnapshotDetail} (its items and search text), which
 * the header locates by byte range. A bootstrap uses at most a few templates, and their items are
 * most of the file (~60% of 290 KB for 40 templates): parsing only the header and those few
 * details costs the hook a fraction of parsing the whole document (~19 ms on Node 20 for 290 KB).
 *
 * This module holds the file's shape and name only; it imports nothing at run time, so both
 * the writer (snapshot.ts, which needs the store) and the reader (snapshot-source.ts, which
 * must not) can share it.
 */
import type { KnowledgeItem, Template, TemplateItem, UserPattern } from '../store/templates.js';

/** File name of the snapshot inside the state folder. */
export const WARM_SNAPSHOT_FILE = 'warm-snapshot.json';

/** `format` field of a snapshot; a file with another value is not ours. */
export const WARM_SNAPSHOT_FORMAT = 'contextd-warm-snapshot';

/** Bumped whenever the shape below changes; a reader refuses any other version. */
export const WARM_SNAPSHOT_VERSION = 2;

/** Term statistics of one template's search text, tokenized the way SQLite FTS5's default (unicode61) tokenizer does. */
export interface SnapshotSearchText {
  /** Tokens in the search text (BM25 document length). */
  readonly length: number;
  /** token → occurrences. */
  readonly tf: Readonly<Record<string, number>>;
  /** The search text itself, for phrase queries (a query word such as `parse_args` is the phrase `parse args`). */
  readonly body: string;
}

/** An item or knowledge item without its confidence: that is recomputed from evidence and age on read. */
export type Unscored<T> = Omit<T, 'confidence'>;

/** A template as stored in the snapshot: its knowledge by id (shared with the repo lists), plus its search text. */
export interface SnapshotTemplate extends Omit<Template, 'knowledge' | 'items'> {
  readonly items: readonly Unscored<TemplateItem>[];
  readonly knowledgeIds: readonly number[];
  readonly search: SnapshotSearchText;
}

/** A template as the header holds it: without its items and search text, which its detail line holds at `detail`. */
export interface SnapshotTemplateHead extends Omit<SnapshotTemplate, 'items' | 'search'> {
  readonly search: Omit<SnapshotSearchText, 'body'>;
  /** Byte offset (from the start of the line after the header) and byte length of the template's detail line. */
  readonly detail: readonly [offset: number, length: number];
}

/** One template's detail line: what only the templates a bootstrap picks need. */
export interface SnapshotDetail {
  readonly items: readonly Unscored<TemplateItem>[];
  /** The template's search text (phrase queries read it). */
  readonly body: string;
}

/** Line 1 of the file: the snapshot without the templates' details. */
export interface WarmSnapshotHeader extends Omit<WarmSnapshotFile, 'templates'> {
  readonly templates: readonly SnapshotTemplateHead[];
}

/** The whole snapshot, as built from the store (the file holds it as a header plus detail lines). */
export interface WarmSnapshotFile {
  readonly format: typeof WARM_SNAPSHOT_FORMAT;
  readonly version: typeof WARM_SNAPSHOT_VERSION;
  /** Epoch ms the snapshot was taken; confidences are recomputed from evidence and age on read. */
  readonly writtenAt: number;
  /** Half-life of confidence decay the store uses. */
  readonly halfLifeMs: number;
  /** Every template, newest first (the store's `list()` order). */
  readonly templates: readonly SnapshotTemplate[];
  /** Every knowledge item a template links to or a repo list names. */
  readonly knowledge: readonly Unscored<KnowledgeItem>[];
  /** repo → ids of its own knowledge, the store's pick (most evidence, newest, at most 100). */
  readonly repoKnowledge: Readonly<Record<string, readonly number[]>>;
  /** Promoted user patterns of every repo, most frequent first. */
  readonly patterns: readonly UserPattern[];
}
