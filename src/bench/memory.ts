/**
 * Heap cost of live session models: sessions built from generated transcripts through the real
 * decoder (as the daemon reads them), held, and measured as the heap growth after a full
 * garbage collection — per session and per token, beside the bytes of the text itself.
 * Not a wall-clock figure: it does not move with machine load.
 */
import { runtimeCollector } from '../util/gc.js';
import { TranscriptDecoder } from '../ingest/decoder.js';
import { SessionModel } from '../model/index.js';
import { createTokenCounter, type TokenCounter } from '../model/tokens.js';
import { applyPlan, planCompaction, SummaryCache } from '../compact/index.js';
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
  /**
   * Grow each session as the daemon does under load instead: its transcript read this many
   * lines at a time, a plan made after each read and applied when it has edits (the window
   * is `planBudgetTokens`). The result then also measures fresh models of the same final
   * messages (`fresh*`): what the applied edits left behind beside what the context holds.
   */
  readonly editEveryLines?: number;
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
  const edited = options.editEveryLines;
  const build = async (i: number): Promise<{ model: SessionModel; cache?: SummaryCache; applied?: number }> => {
    if (edited !== undefined) return buildEdited(i, rounds, edited, options.planBudgetTokens ?? 50_000, counter);
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
  const held: { model: SessionModel; cache?: SummaryCache; applied?: number }[] = [];
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
  const fresh = edited !== undefined ? freshOf(models, counter, heap) : undefined;
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
    ...(edited !== undefined
      ? {
          editEveryLines: edited,
          appliedPlansPerSession: round(held.reduce((n, h) => n + (h.applied ?? 0), 0) / sessions, 1),
          freshHeapBytesPerToken: round((fresh ?? 0) / Math.max(1, tokens), 2),
        }
      : {}),
  };
}

/** A session grown `every` lines at a time, with a plan made after each read and applied when it has edits. */
async function buildEdited(i: number, rounds: number, every: number, budgetTokens: number, counter: TokenCounter): Promise<{ model: SessionModel; applied: number }> {
  const model = new SessionModel({ sessionId: `mem-${i}`, tokenCounter: counter, budgetTokens });
  const decoder = new TranscriptDecoder();
  const lines = generatedTranscript(i, rounds).toString('utf8').split('\n');
  const cache = new SummaryCache();
  let applied = 0;
  for (let at = 0; at < lines.length; at += every) {
    const chunk = lines.slice(at, at + every).join('\n');
    if (chunk === '') continue;
    model.applyAll(decoder.push(Buffer.from(`${chunk}\n`)));
    const plan = await planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache });
    if (plan.edits.length === 0) continue;
    applyPlan(model, plan);
    applied++;
  }
  model.sections();
  return { model, applied };
}

/** Heap per session (bytes) of fresh models of the same messages as `models` (copies: no object shared with them). */
function freshOf(models: readonly SessionModel[], counter: TokenCounter, heap: () => number): number {
  const before = heap();
  const copies = models.map((m) => m.messages().map((x) => structuredClone(x)));
  const fresh = copies.map((messages, i) => {
    const model = new SessionModel({ sessionId: `fresh-${i}`, tokenCounter: counter, budgetTokens: 1_000_000 });
    for (const message of messages) model.apply({ type: 'message', message });
    model.sections();
    return model;
  });
  copies.length = 0;
  // The copies' messages belong to the fresh models now: they count there, as in the edited ones.
  const after = heap();
  return fresh.length > 0 ? (after - before) / fresh.length : 0;
}
