/**
 * What the proxy is handed by the daemon. Declared structurally so proxy/ depends on shapes,
 * not on store/ (the store's Archive satisfies ArchiveSink).
 */
import type { Message } from '../model/messages.js';

/** The originals one applied edit replaced, archived under the handle its summary quotes. */
export interface ArchiveEntry {
  readonly handle: string;
  readonly sessionId: string;
  readonly planId?: string | undefined;
  readonly editId?: string | undefined;
  readonly reason: string;
  readonly sectionIds: readonly string[];
  readonly messages: readonly Message[];
  readonly tokens: number;
  readonly createdAt: number;
}

export interface ArchiveSink {
  /** Store several entries atomically; throws when they cannot be stored. */
  putMany(entries: readonly ArchiveEntry[]): void;
  /** The archived originals of a handle (for the recall tool). */
  get(handle: string): { readonly messages: readonly { readonly id: string; readonly role: string; readonly text: string }[] } | undefined;
}
