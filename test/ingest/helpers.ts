import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TranscriptFormat } from '../../src/ingest/index.js';
import type { Message, TranscriptEvent } from '../../src/model/messages.js';

/** The shared real-transcript corpus (read-only). Tests fail loudly when it is missing. */
export const CORPUS_DIR = fileURLToPath(new URL('../../../shared/corpus/', import.meta.url));

export function corpusJsonlFiles(): string[] {
  if (!existsSync(CORPUS_DIR)) throw new Error(`corpus directory missing: ${CORPUS_DIR}`);
  const files = readdirSync(CORPUS_DIR)
    .filter((f) => f.endsWith('.jsonl'))
    .sort();
  if (files.length === 0) throw new Error(`no .jsonl files in corpus ${CORPUS_DIR}`);
  return files;
}

export function corpusPath(name: string): string {
  return CORPUS_DIR + name;
}

/** Expected adapter format from the corpus file-name prefix (`<format>__owner_repo__name`). */
export function expectedFormat(name: string): TranscriptFormat {
  const prefix = name.split('__')[0];
  switch (prefix) {
    case 'claude-code':
      return 'claude-code';
    case 'codex':
    case 'codex-legacy':
      return 'codex';
    case 'hermes':
      return 'openai-chat';
    default:
      throw new Error(`no expected format for corpus file ${name}`);
  }
}

export function messages(events: readonly TranscriptEvent[]): Message[] {
  const out: Message[] = [];
  for (const e of events) if (e.type === 'message') out.push(e.message);
  return out;
}

/** Lines of a JSONL text as parsed objects (for building expectations from the raw file). */
export function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l.trim().length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Encode objects as JSONL bytes. */
export function jsonl(...lines: unknown[]): Buffer {
  return Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
}
