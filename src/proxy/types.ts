/**
 * What the proxy is handed by the daemon: the store's archive (its own types describe what
 * is stored), and an optional filter that redacts originals before they are archived.
 */
import type { ArchivedEdit, Archive, RedactionCount } from '../store/index.js';
import type { Message } from '../model/messages.js';

/** The part of the store's Archive the proxy uses: storing a plan's originals, and recalling them. */
export type ArchiveSink = Pick<Archive, 'putMany' | 'get'>;

/** The originals one applied edit replaced, archived under the handle its summary quotes. */
export type ArchiveEntry = ArchivedEdit;

/** Turns originals into what is archived (secret redaction), with what was redacted. */
export type OriginalsFilter = (messages: readonly Message[]) => Promise<{ messages: Message[]; findings: RedactionCount[] }>;
