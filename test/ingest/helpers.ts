import type { TranscriptFormat } from '../../src/ingest/index.js';
import type { Message, TranscriptEvent } from '../../src/model/messages.js';

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
