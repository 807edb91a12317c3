import type { Message, ToolCall, TranscriptEvent } from '../../src/model/messages.js';
import { createTokenCounter, decodeAnalysis, encodeAnalysis, type DerivedDataCache, type TextAnalysis, type TextOwner, type TokenCounter } from '../../src/model/index.js';
import { fnv1a32 } from '../../src/text/index.js';

export function msg(m: Partial<Message> & Pick<Message, 'id' | 'role'>): TranscriptEvent {
  return { type: 'message', message: { text: '', ...m } };
}
export const sys = (id: string, text: string): TranscriptEvent => msg({ id, role: 'system', text });
export const user = (id: string, text: string, extra: Partial<Message> = {}): TranscriptEvent =>
  msg({ id, role: 'user', text, ...extra });
export const asst = (id: string, text: string, extra: Partial<Message> = {}): TranscriptEvent =>
  msg({ id, role: 'assistant', text, ...extra });
export const call = (id: string, name: string, args: string): ToolCall => ({ id, name, arguments: args });
export const callMsg = (id: string, calls: ToolCall[], text = '', extra: Partial<Message> = {}): TranscriptEvent =>
  msg({ id, role: 'assistant', text, toolCalls: calls, ...extra });
export const result = (id: string, callId: string, text: string, extra: Partial<Message> = {}): TranscriptEvent =>
  msg({ id, role: 'tool', toolCallId: callId, text, ...extra });

/** A real tiktoken counter that records how often it is called. */
export function countingCounter(): TokenCounter & { calls: number } {
  const inner = createTokenCounter('o200k_base');
  const c = {
    encoding: inner.encoding,
    calls: 0,
    count(text: string): number {
      c.calls++;
      return inner.count(text);
    },
  };
  return c;
}

/** Varied prose of about `n` words, deterministic per seed. */
export function prose(seed: number, n = 60): string {
  const vocab =
    'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu parser lexer token stream buffer socket daemon window budget compaction section summary archive handle planner detector'.split(
      ' ',
    );
  let x = seed * 2654435761 + 1;
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out.push(vocab[x % vocab.length] as string);
  }
  return out.join(' ');
}

/** What a derived-data row records of its text (the daemon's cache uses an independent lane of its key hash; any stable hash fits here). */
export const ownerOf = (text: string): TextOwner => ({ chars: text.length, check: fnv1a32(text) });

/**
 * An in-memory DerivedDataCache that keeps encoded rows and decodes them on every read, as the
 * daemon's SQLite cache does (that one is tested in test/daemon); counts texts asked and found.
 */
export class MapCache implements DerivedDataCache {
  readonly rows = new Map<string, Uint8Array>();
  asked = 0;
  found = 0;
  getMany(texts: readonly string[]): (TextAnalysis | undefined)[] {
    this.asked += texts.length;
    return texts.map((t) => {
      const b = this.rows.get(t);
      const a = b ? decodeAnalysis(b, ownerOf(t)) : undefined;
      if (a) this.found++;
      return a;
    });
  }
  setMany(entries: readonly { text: string; analysis: TextAnalysis }[]): void {
    for (const { text, analysis } of entries) this.rows.set(text, encodeAnalysis(analysis, ownerOf(text)));
  }
}
