/**
 * The full ingest path (decode + SessionModel: pairing, token counting, headroom) over the
 * corpus, compared with tiktoken alone on the same text, and the cost of one append as a
 * session grows from 1k to 1M tokens (it must stay flat: nothing earlier is re-tokenized).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TranscriptDecoder } from '../ingest/decoder.js';
import type { TranscriptEvent } from '../model/messages.js';
import { SessionModel } from '../model/index.js';
import { createTokenCounter } from '../model/tokens.js';
import { createOpenAIChatAdapter } from '../ingest/adapters/openai-chat.js';
import { demoTranscript } from '../demo/transcript.js';
import { round, summarize } from './harness.js';

async function corpusBuffers(dir: string): Promise<Buffer[]> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.jsonl')).sort();
  return Promise.all(names.map((n) => readFile(join(dir, n))));
}

/** decode → SessionModel.applyAll → headroom, once per file, with a fresh model each pass. */
function ingestPass(buffers: readonly Buffer[]): { tokens: number } {
  let tokens = 0;
  for (const [i, buf] of buffers.entries()) {
    const d = new TranscriptDecoder();
    const events = d.push(buf);
    const m = new SessionModel({ sessionId: `b${i}`, tokenCounter: createTokenCounter() });
    m.applyAll(events);
    tokens += m.headroom().tokens;
  }
  return { tokens };
}

/** One synthetic append: a grep tool call and its ~700-token result, as openai-chat events. */
function appendEvents(adapter: ReturnType<typeof createOpenAIChatAdapter>, k: number, offset: number): TranscriptEvent[] {
  const lines = demoTranscript({ rounds: 1, variant: String.fromCharCode(97 + (k % 26)) }).filter((l) => l.tool_calls || l.role === 'tool').slice(2, 4);
  const out: TranscriptEvent[] = [];
  for (const [j, l] of lines.entries()) {
    const v = JSON.parse(JSON.stringify({ ...l, tool_call_id: l.tool_call_id ? `${l.tool_call_id}_${k}` : undefined, tool_calls: l.tool_calls?.map((t) => ({ ...t, id: `${t.id}_${k}` })) })) as Record<string, unknown>;
    out.push(...adapter.parseLine(v, offset + j));
  }
  return out;
}

/** Time of one append (apply + headroom) at growing session sizes. */
function appendCost(sizes: readonly number[]): Record<string, unknown>[] {
  const counter = createTokenCounter();
  const adapter = createOpenAIChatAdapter();
  const model = new SessionModel({ sessionId: 'grow', tokenCounter: counter, budgetTokens: 2_000_000 });
  model.applyAll(demoTranscript({ rounds: 0 }).slice(0, 2).flatMap((l, i) => adapter.parseLine(JSON.parse(JSON.stringify(l)) as Record<string, unknown>, i)));
  const out: Record<string, unknown>[] = [];
  let k = 0;
  let offset = 1_000;
  for (const size of sizes) {
    while (model.tokens() < size) model.applyAll(appendEvents(adapter, k++, (offset += 10)));
    const atTokens = model.tokens();
    const samples: number[] = [];
    const withScores: number[] = [];
    for (let i = 0; i < 30; i++) {
      const events = appendEvents(adapter, k++, (offset += 10));
      const t0 = performance.now();
      model.applyAll(events);
      model.headroom();
      samples.push(performance.now() - t0);
    }
    for (let i = 0; i < 5; i++) {
      const events = appendEvents(adapter, k++, (offset += 10));
      const t0 = performance.now();
      model.applyAll(events);
      model.sections();
      withScores.push(performance.now() - t0);
    }
    out.push({ sessionTokens: atTokens, sections: model.headroom().sections, appendMs: summarize(samples), appendAndRescoreMs: summarize(withScores) });
  }
  return out;
}

export async function benchModel(opts: { corpusDir: string }): Promise<Record<string, unknown>> {
  const buffers = await corpusBuffers(opts.corpusDir);
  const bytes = buffers.reduce((n, b) => n + b.length, 0);
  // Raw tokenizer on exactly the text the model counts (message texts), for the ratio.
  const texts: string[] = [];
  for (const buf of buffers) {
    for (const e of new TranscriptDecoder().push(buf)) {
      if (e.type !== 'message') continue;
      const m = e.message;
      texts.push(m.text, m.reasoning ?? '', ...(m.toolCalls ?? []).flatMap((c) => [c.name, c.arguments]));
    }
  }
  const counter = createTokenCounter();
  ingestPass(buffers); // warm-up
  const t0 = performance.now();
  let tokens = 0;
  for (const t of texts) tokens += counter.count(t);
  const tokenizeMs = performance.now() - t0;
  const t1 = performance.now();
  const r = ingestPass(buffers);
  const ingestMs = performance.now() - t1;
  return {
    corpusBytes: bytes,
    tokenizerOnly: { ms: round(tokenizeMs, 1), tokens, tokensPerSec: Math.round(tokens / (tokenizeMs / 1000)) },
    fullIngest: { ms: round(ingestMs, 1), tokens: r.tokens, mbPerSec: round(bytes / 1048576 / (ingestMs / 1000)), tokensPerSec: Math.round(r.tokens / (ingestMs / 1000)) },
    ingestShareOfTokenizerThroughput: round(tokenizeMs / ingestMs),
    appendCost: appendCost([1_000, 10_000, 100_000, 1_000_000]),
  };
}
