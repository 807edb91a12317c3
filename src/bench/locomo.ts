/**
 * LoCoMo retention: long multi-session chats compacted to 30% and 50% of their tokens by every
 * strategy, scored by the measure in the data set's README (../shared/locomo/README.md):
 *
 *  - each conversation becomes an openai-chat session: one system line, then per session a
 *    user line `[new chat session, <date_time>]`, then every turn as `<speaker>: <text>`
 *    (speaker A is the user; a shared photo's caption is appended as ` [shares a photo: …]`);
 *  - a QA of category 1, 2 or 4 is answerable from a context when every content word of its
 *    answer (lower-cased `[a-z0-9]+` words minus a short stop-word list) appears in one single
 *    message of it; only QAs answerable from the full conversation count;
 *  - a compacted context over its budget keeps nothing;
 *  - search recall: for each QA the compacted context lost, searching the archive with the
 *    question returns, in its top 5 hits, an original message that makes it answerable.
 *
 * The data is never copied into the repository: it is read from `$CONTEXTD_LOCOMO` or a
 * directory given by the caller.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TranscriptEvent } from '../model/messages.js';
import { SessionModel } from '../model/index.js';
import { createTokenCounter, type TokenCounter } from '../model/tokens.js';
import { Archive, MIGRATIONS, migrate, openDb } from '../store/index.js';
import { archiveEntries, compactWithStrategy, planCompaction, redactEntries, STRATEGIES, type OpenAIChatMessage, type StrategyName } from '../compact/index.js';
import { redactMessages } from '../harvest/redact.js';
import { cellKey, cellRows, countProbe, countRun, emptyCell, ratio, type Cell } from './tally.js';

/** The README's stop words: answer words that do not count. */
const STOP = new Set(
  'a an the of to in on at for and or but is was were be been are it its this that with as by from i you he she we they my your his her our their me him them do did does not no yes so'.split(' '),
);
export const LOCOMO_BUDGETS = [0.3, 0.5] as const;
/** QA categories the measure scores (1 multi-hop, 2 temporal, 4 single-hop). */
export const LOCOMO_CATEGORIES = [1, 2, 4] as const;
const CATEGORY_NAME: Record<number, string> = { 1: 'multi-hop', 2: 'temporal', 4: 'single-hop' };

interface Turn {
  readonly speaker: string;
  readonly text: string;
  readonly blip_caption?: string;
}
interface Qa {
  readonly question: string;
  readonly answer?: unknown;
  readonly category: number;
}
interface Conversation {
  readonly sample_id: string;
  readonly conversation: Record<string, unknown>;
  readonly qa: readonly Qa[];
}

/** A conversation as the README's openai-chat session. */
export interface LocomoSession {
  readonly id: string;
  readonly messages: readonly OpenAIChatMessage[];
  readonly qa: readonly { readonly question: string; readonly words: readonly string[]; readonly category: number }[];
}

/** Content words of an answer: lower-cased `[a-z0-9]+` words minus the stop words. */
export function contentWords(text: string): string[] {
  return [...new Set((text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((w) => !STOP.has(w)))];
}

/** The word set of one message (its content as the measure reads it). */
function wordSet(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[a-z0-9]+/g) ?? []);
}

/** True when every word appears in one single message of `sets`. */
export function answerable(words: readonly string[], sets: readonly Set<string>[]): boolean {
  return words.length > 0 && sets.some((s) => words.every((w) => s.has(w)));
}

/** Where the data set is: `dir`, else `$CONTEXTD_LOCOMO`; undefined when neither holds it. */
export function locomoFile(dir?: string): string | undefined {
  const d = dir ?? process.env['CONTEXTD_LOCOMO'];
  if (!d) return undefined;
  const f = join(d, 'locomo-dev.json');
  return existsSync(f) ? f : undefined;
}

/** Read the conversations and build each as the README's session. */
export function loadLocomo(file: string): LocomoSession[] {
  const data = JSON.parse(readFileSync(file, 'utf8')) as Conversation[];
  return data.map((c) => {
    const conv = c.conversation;
    const speakerA = String(conv['speaker_a']);
    const messages: OpenAIChatMessage[] = [{ role: 'system', content: `A long conversation between ${speakerA} and ${String(conv['speaker_b'])}.` }];
    const sessionNos = Object.keys(conv)
      .map((k) => /^session_(\d+)$/.exec(k)?.[1])
      .filter((n): n is string => n !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    for (const n of sessionNos) {
      const turns = conv[`session_${n}`] as Turn[] | undefined;
      if (!Array.isArray(turns) || turns.length === 0) continue;
      messages.push({ role: 'user', content: `[new chat session, ${String(conv[`session_${n}_date_time`])}]` });
      for (const t of turns) {
        const photo = t.blip_caption ? ` [shares a photo: ${t.blip_caption}]` : '';
        messages.push({ role: t.speaker === speakerA ? 'user' : 'assistant', content: `${t.speaker}: ${t.text}${photo}` });
      }
    }
    const full = messages.map((m) => wordSet(m.content));
    const qa = c.qa
      .filter((q) => (LOCOMO_CATEGORIES as readonly number[]).includes(q.category))
      .map((q) => ({ question: q.question, words: contentWords(String(q.answer ?? '')), category: q.category }))
      .filter((q) => answerable(q.words, full));
    return { id: c.sample_id, messages, qa };
  });
}

/** Transcript events of a LoCoMo session (ids `m0…`), as the adapters would emit them. */
export function locomoEvents(s: LocomoSession): TranscriptEvent[] {
  return s.messages.map((m, i) => ({ type: 'message', message: { id: `${s.id}-m${i}`, role: m.role, text: m.content } }));
}

export interface LocomoOptions {
  readonly file: string;
  readonly strategies?: readonly StrategyName[];
  readonly counter?: TokenCounter;
  /**
   * A directory for a scratch SQLite archive: contextd's edits are archived there and each
   * QA the compacted context lost is searched for (archive.search, top 5). Omitted: no search.
   */
  readonly archiveDir?: string;
}

/** Archive the originals of contextd's plan for `model` at `target` tokens, as the daemon does (secrets redacted). */
async function archivePlan(archive: Archive, model: SessionModel, sessionId: string, target: number, counter: TokenCounter): Promise<void> {
  const plan = await planCompaction(model, { mode: 'manual', targetTokens: target, tokenCounter: counter });
  archive.putMany(await redactEntries(archiveEntries(model, plan.edits, { sessionId, planId: plan.planId, createdAt: plan.createdAt }), redactMessages));
}

interface Tally extends Cell {
  lost: number;
  found: number;
  /** Lost QAs whose best hit alone makes them answerable. */
  foundFirst: number;
  edits: number;
}

/** The LoCoMo table: answerable share per strategy × budget × QA category. */
export async function benchLocomo(o: LocomoOptions): Promise<Record<string, unknown>> {
  // One archive per budget: the same run of messages has the same handle at both budgets.
  const dbs = o.archiveDir !== undefined ? LOCOMO_BUDGETS.map((share) => openDb(join(o.archiveDir as string, `locomo-archive-${share}.db`))) : [];
  try {
    const archives = new Map<number, Archive>();
    dbs.forEach((db, i) => {
      migrate(db, MIGRATIONS);
      archives.set(LOCOMO_BUDGETS[i] as number, new Archive(db));
    });
    return await measure(o, archives);
  } finally {
    for (const db of dbs) db.close();
  }
}

async function measure(o: LocomoOptions, archives: ReadonlyMap<number, Archive>): Promise<Record<string, unknown>> {
  const started = Date.now();
  const counter = o.counter ?? createTokenCounter();
  const strategies = o.strategies ?? STRATEGIES;
  const sessions = loadLocomo(o.file);
  const tallies = new Map<string, Tally>();
  const perConversation: Record<string, unknown>[] = [];
  for (const s of sessions) {
    const model = new SessionModel({ sessionId: s.id, tokenCounter: counter });
    model.applyAll(locomoEvents(s));
    const tokens = model.tokens();
    const row: Record<string, unknown> = { conversation: s.id, tokens, qa: s.qa.length, anchors: model.sections().filter((x) => x.anchor).length };
    for (const share of LOCOMO_BUDGETS) {
      for (const strategy of strategies) {
        const res = await compactWithStrategy(model, { strategy, budgetTokens: Math.floor(tokens * share), reserveRatio: 0, tokenCounter: counter });
        const within = res.tokensAfter <= res.budget;
        const sets = within ? res.messages.map((m) => wordSet(m.content)) : [];
        const key = cellKey(strategy, share);
        const t = tallies.get(key) ?? { ...emptyCell(), lost: 0, found: 0, foundFirst: 0, edits: 0 };
        let kept = 0;
        const lost: (typeof s.qa)[number][] = [];
        for (const q of s.qa) {
          const ok = answerable(q.words, sets);
          countProbe(t, q.category, ok);
          if (ok) kept++;
          else lost.push(q);
        }
        const archive = archives.get(share);
        if (archive && strategy === 'contextd' && within) {
          const sessionId = s.id;
          await archivePlan(archive, model, sessionId, res.budget, counter);
          for (const q of lost) {
            const hits = archive.search(q.question, { sessionId, limit: 5 });
            t.lost++;
            const answers = hits.map((h) => answerable(q.words, h.messages.map((m) => wordSet(m.text))));
            if (answers.some(Boolean)) t.found++;
            if (answers[0] === true) t.foundFirst++;
          }
        }
        countRun(t, res);
        t.edits += res.edits.length;
        tallies.set(key, t);
        row[key] = ratio(kept, s.qa.length);
      }
    }
    perConversation.push(row);
  }
  const rows = cellRows(tallies, LOCOMO_BUDGETS, strategies, LOCOMO_CATEGORIES, { name: (c) => CATEGORY_NAME[Number(c)] ?? String(c) });
  const table = rows.map(({ strategy, budget, kept, byCategory, cell: t }) => ({
    strategy,
    budget,
    answerable: kept,
    ...byCategory,
    tokensKept: ratio(t.tokensAfter, t.tokensBefore),
    overBudget: t.overBudget,
    edits: t.edits,
    // search recall is per archived edit (a hit is one edit's originals): read it with `edits`
    ...(archives.size > 0 && strategy === 'contextd' ? { lostQa: t.lost, searchFound: t.found, searchRecall: ratio(t.found, t.lost), searchRecallTop1: ratio(t.foundFirst, t.lost) } : {}),
  }));
  return { conversations: sessions.length, qa: sessions.reduce((n, s) => n + s.qa.length, 0), table, perConversation, elapsedMs: Date.now() - started };
}
