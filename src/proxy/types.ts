/**
 * What the proxy is handed by the daemon: the store's archive (its own types describe what
 * is stored), and an optional filter that redacts originals before they are archived.
 */
import type { ArchivedEdit, Archive } from '../store/index.js';

/** The part of the store's Archive the proxy uses: storing a plan's originals, and recalling them. */
export type ArchiveSink = Pick<Archive, 'putMany' | 'get'>;

/** The originals one applied edit replaced, archived under the handle its summary quotes. */
export type ArchiveEntry = ArchivedEdit;

export type { OriginalsFilter } from '../compact/index.js';
