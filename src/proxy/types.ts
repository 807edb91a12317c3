/**
 * What the proxy is handed by the daemon: the store's archive (its own types describe what
 * is stored), and an optional filter that redacts originals before they are archived.
 */
import type { Archive } from '../store/index.js';

/** The part of the store's Archive the proxy uses: storing a plan's originals, and recalling them. */
export type ArchiveSink = Pick<Archive, 'putMany' | 'get'>;

export type { OriginalsFilter } from '../compact/index.js';
