/**
 * Ingest throughput over the real corpus: decode (framing + JSON.parse + adapter), raw
 * tiktoken o200k counting of the text the adapters produced, and decode + tokenize together.
 * Returns JSON figures; the lead wires it into `npm run bench`.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { TranscriptDecoder } from '../ingest/decoder.js';
import type { Message, TranscriptEvent } from '../model/messages.js';
import { createTokenCounter } from '../model/tokens.js';

export interface BenchIngestOptions {
  readonly corpusDir: string;
  /** Minimum measured time per phase, in ms (repeats the corpus until reached; default 1000). */
  readonly minDurationMs?: number;
}

/** The texts a token counter sees for one message: body, reasoning, tool call names and arguments. */
function messageTexts(m: Message): string[] {
  const out = [m.text];
  if (m.reasoning !== undefined) out.push(m.reasoning);
  for (const c of m.toolCalls ?? []) out.push(c.name, c.arguments);
  return out.filter((t) => t.length > 0);
}

function decodeAll(buffers: readonly Buffer[]): { events: TranscriptEvent[][]; lines: number } {
  const events: TranscriptEvent[][] = [];
  let lines = 0;
  for (const buf of buffers) {
    const d = new TranscriptDecoder();
    events.push(d.push(buf));
    lines += d.counts.lines;
  }
  return { events, lines };
}

/** Repeat `fn` until `minMs` elapsed (at least once); returns runs and total ms. */
function timed(minMs: number, fn: () => void): { runs: number; ms: number } {
  let runs = 0;
  const start = performance.now();
  let ms = 0;
  do {
    fn();
    runs++;
    ms = performance.now() - start;
  } while (ms < minMs);
  return { runs, ms };
}

const MB = 1024 * 1024;
const round = (n: number, digits = 2) => Number(n.toFixed(digits));

export async function benchIngest(opts: BenchIngestOptions): Promise<Record<string, unknown>> {
  const minMs = opts.minDurationMs ?? 1000;
  const names = (await readdir(opts.corpusDir)).filter((f) => f.endsWith('.jsonl')).sort();
  if (names.length === 0) throw new Error(`no .jsonl files in ${opts.corpusDir}`);
  const buffers = await Promise.all(names.map((n) => readFile(join(opts.corpusDir, n))));
  const bytes = buffers.reduce((n, b) => n + b.length, 0);

  // Warm up (JIT, tiktoken tables) and collect the adapters' text once.
  const first = decodeAll(buffers);
  const counter = createTokenCounter('o200k_base');
  const texts: string[] = [];
  let messageCount = 0;
  for (const evs of first.events) {
    for (const e of evs) {
      if (e.type !== 'message') continue;
      messageCount++;
      texts.push(...messageTexts(e.message));
    }
  }
  const textBytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
  counter.count(texts[0] ?? 'warm up');

  const decode = timed(minMs, () => decodeAll(buffers));
  let tokens = 0;
  const tokenize = timed(minMs, () => {
    tokens = 0;
    for (const t of texts) tokens += counter.count(t);
  });
  const both = timed(minMs, () => {
    for (const buf of buffers) {
      const d = new TranscriptDecoder();
      for (const e of d.push(buf)) if (e.type === 'message') for (const t of messageTexts(e.message)) counter.count(t);
    }
  });

  const perRun = (t: { runs: number; ms: number }) => t.ms / t.runs;
  return {
    files: names.length,
    bytes,
    lines: first.lines,
    messages: messageCount,
    decode: {
      msPerPass: round(perRun(decode)),
      mbPerSec: round(bytes / MB / (perRun(decode) / 1000)),
      linesPerSec: Math.round(first.lines / (perRun(decode) / 1000)),
    },
    tokenizeO200k: {
      textBytes,
      tokens,
      msPerPass: round(perRun(tokenize)),
      mbPerSec: round(textBytes / MB / (perRun(tokenize) / 1000)),
      tokensPerSec: Math.round(tokens / (perRun(tokenize) / 1000)),
    },
    decodeAndTokenize: {
      msPerPass: round(perRun(both)),
      mbPerSec: round(bytes / MB / (perRun(both) / 1000)),
      linesPerSec: Math.round(first.lines / (perRun(both) / 1000)),
    },
  };
}
