/**
 * Heap cost of live session models: sessions built from generated transcripts through the real
 * decoder (as the daemon reads them), held, and measured as the heap growth after a full
 * garbage collection — per session and per token, beside the bytes of the text itself.
 * Not a wall-clock figure: it does not move with machine load.
 */
import { runtimeCollector } from '../util/gc.js';
import { TranscriptDecoder } from '../ingest/decoder.js';
import { SessionModel } from '../model/index.js';
import { createTokenCounter } from '../model/tokens.js';
import { planCompaction, SummaryCache } from '../compact/index.js';
import { round } from './harness.js';
import { generatedTranscript } from './transcripts.js';

export interface MemoryBenchOptions {
  /** Sessions held at once (default 4). */
  readonly sessions?: number;
  /** Demo transcript rounds per session; 110 gives ~264k tokens (default). */
  readonly rounds?: number;
  /** Also make one plan per session (fills the planner's caches) before measuring. */
  readonly plan?: boolean;
  /**
   * Read the sections' scores once (derives every message's term stats and fingerprint) before
   * measuring (default true). False measures a session as a scan leaves it until its first plan.
   */
  readonly scored?: boolean;
  /** Context window of planned sessions (default 200k; a 264k-token session then needs edits). */
  readonly planBudgetTokens?: number;
}

/** A full collection (the daemon's own way of getting one). */
function collector(): () => void {
  const gc = runtimeCollector();
  if (!gc) throw new Error('bench memory needs a full garbage collection, and this runtime exposes none');
  return gc;
}

/** Heap growth of `sessions` live models, per session and per token. */
export async function benchMemory(options: MemoryBenchOptions = {}): Promise<Record<string, unknown>> {
  const sessions = options.sessions ?? 4;
  const rounds = options.rounds ?? 110;
  const gc = collector();
  const counter = createTokenCounter();
  const heap = (): number => {
    gc();
    gc();
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  const build = async (i: number): Promise<{ model: SessionModel; cache?: SummaryCache }> => {
    const model = new SessionModel({ sessionId: `mem-${i}`, tokenCounter: counter, budgetTokens: options.plan ? (options.planBudgetTokens ?? 200_000) : 1_000_000 });
    model.applyAll(new TranscriptDecoder().push(generatedTranscript(i, rounds)));
    if (options.scored !== false || options.plan) model.sections();
    if (!options.plan) return { model };
    const cache = new SummaryCache();
    await planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache });
    return { model, cache };
  };
  // Warm up code paths (compiled code lives on the heap too) outside the measure.
  await build(-1);
  const before = heap();
  const held: { model: SessionModel; cache?: SummaryCache }[] = [];
  for (let i = 0; i < sessions; i++) held.push(await build(i));
  const after = heap();
  const models = held.map((h) => h.model);
  let textBytes = 0;
  for (const m of models[0]?.messages() ?? []) {
    textBytes += m.text.length + (m.reasoning?.length ?? 0);
    for (const c of m.toolCalls ?? []) textBytes += c.name.length + c.arguments.length;
  }
  const tokens = models[0]?.tokens() ?? 0;
  const perSession = (after - before) / sessions;
  return {
    scenario: 'memory',
    sessions,
    tokensPerSession: tokens,
    sectionsPerSession: models[0]?.sections().length ?? 0,
    planned: options.plan === true,
    scored: options.scored !== false || options.plan === true,
    heapMiBPerSession: round(perSession / 2 ** 20, 2),
    heapBytesPerToken: round(perSession / Math.max(1, tokens), 2),
    textMiBPerSession: round(textBytes / 2 ** 20, 2),
    textBytesPerToken: round(textBytes / Math.max(1, tokens), 2),
  };
}
