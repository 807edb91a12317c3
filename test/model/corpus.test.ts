/**
 * The model over every sample transcript (generated ones, plus the real corpus when
 * CONTEXTD_CORPUS is set), read through the ingest decoder.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTranscriptFile, type TranscriptFile } from '../../src/ingest/index.js';
import type { Message } from '../../src/model/messages.js';
import { SessionModel, isAcknowledgement, createTokenCounter, type Section } from '../../src/model/index.js';
import { writeSamples } from '../fixtures/samples.js';
import { generatedCorpus } from '../fixtures/transcripts.js';

const counter = createTokenCounter('o200k_base');

const DIR = mkdtempSync(join(tmpdir(), 'contextd-model-corpus-'));
const PATHS = writeSamples(DIR);
const FILES = [...PATHS.keys()];
afterAll(() => rmSync(DIR, { recursive: true, force: true }));

const read = new Map<string, TranscriptFile>();
beforeAll(async () => {
  for (const [f, path] of PATHS) read.set(f, await readTranscriptFile(path));
});

function build(file: string): SessionModel {
  const r = read.get(file);
  if (!r) throw new Error(`not read: ${file}`);
  const m = new SessionModel({ sessionId: file, tokenCounter: counter });
  m.applyAll(r.events);
  return m;
}

/** Models that tests only read, built once per file. */
const built = new Map<string, SessionModel>();
function buildShared(file: string): SessionModel {
  let m = built.get(file);
  if (!m) built.set(file, (m = build(file)));
  return m;
}

function firstRealInstruction(file: string): string | undefined {
  for (const e of read.get(file)?.events ?? []) {
    if (e.type === 'reset' || (e.type === 'truncate' && e.keepThroughId === null)) return undefined;
    if (e.type !== 'message') continue;
    const m = e.message;
    if (m.role === 'user' && !m.injected && !m.isSummary && !isAcknowledgement(m.text)) return m.id;
  }
  return undefined;
}

/** Ids of the tool calls a section's messages mention (calls and results). */
function callIdsOf(messages: readonly Message[]): Set<string> {
  const ids = new Set<string>();
  for (const m of messages) {
    for (const c of m.toolCalls ?? []) ids.add(c.id);
    if (m.toolCallId !== undefined) ids.add(m.toolCallId);
  }
  return ids;
}

describe('model over every sample transcript', () => {
  it('has transcripts to test', () => {
    expect(FILES.length).toBeGreaterThanOrEqual(generatedCorpus().length);
  });

  it.each(FILES)('%s: builds a consistent, scored model', (file) => {
    const m = buildShared(file);
    const secs = m.sections();
    const h = m.headroom();
    expect(m.tokens()).toBeGreaterThan(0);
    expect(secs.length).toBeGreaterThan(0);
    expect(h.headroom).toBeLessThanOrEqual(1);
    expect(h.countedTokens).toBe(m.tokens());
    expect(h.headroom).toBeCloseTo(1 - h.tokens / m.budget().total, 12);
    // Once the agent reported usage, headroom counts its figure (calibrated), not only ours.
    if (h.reportedTokens !== undefined) {
      expect(h.tokens).toBe(Math.max(0, m.calibration().estimatedTokens));
      expect(Math.abs(h.tokens - h.reportedTokens)).toBeLessThan(Math.abs(h.countedTokens - h.reportedTokens) + 1);
    } else {
      expect(h.tokens).toBe(h.countedTokens);
    }
    expect(h.sections).toBe(secs.length);
    expect(secs.reduce((a, s) => a + s.tokens, 0)).toBe(m.tokens());
    expect(new Set(secs.map((s) => s.id)).size).toBe(secs.length);

    const live = new Set(m.messages().map((x) => x.id));
    for (const s of secs) {
      const f = s.factors;
      expect(s.score).toBeCloseTo(f.priorityWeight * f.relevance * f.recencyWeight * f.density, 12);
      expect(s.relevance).toBeGreaterThan(0);
      expect(s.relevance).toBeLessThanOrEqual(1);
      expect(s.density).toBeGreaterThan(0);
      expect(s.density).toBeLessThanOrEqual(1);
      expect(s.recency.weight).toBeGreaterThan(0);
      expect(s.recency.weight).toBeLessThanOrEqual(1);
      for (const id of s.messageIds) expect(live.has(id)).toBe(true);
      const msgs = m.messagesOf(s.id);
      // No section mixes messages of two tool calls.
      expect(callIdsOf(msgs).size).toBeLessThanOrEqual(1);
      if (s.kind === 'tool-call' || (s.kind === 'error-trace' && msgs.some((x) => x.toolCalls?.length))) {
        const callMsg = msgs.find((x) => x.role === 'assistant');
        expect(callMsg?.toolCalls).toHaveLength(1);
        const callId = callMsg?.toolCalls?.[0]?.id;
        const results = msgs.filter((x) => x.role === 'tool');
        if (s.pending) expect(results).toHaveLength(0);
        else {
          // A tool-call section contains its result.
          expect(results.length).toBeGreaterThan(0);
          for (const r of results) expect(r.toolCallId).toBe(callId);
        }
      }
      if (s.pending) expect(s.anchor).toBe(true);
      if (s.kind === 'system') expect(s.anchor).toBe(true);
    }
    // The current goal is an anchor; older requests are anchors only when they state a constraint.
    const goal = m.goal().sectionId;
    if (goal !== undefined) expect(m.section(goal)?.anchor).toBe(true);

    // Every live result whose call is live sits in the call's section.
    const sectionOfCall = new Map<string, string>();
    for (const s of secs) for (const x of m.messagesOf(s.id)) for (const c of x.toolCalls ?? []) sectionOfCall.set(c.id, s.id);
    for (const s of secs) {
      for (const x of m.messagesOf(s.id)) {
        if (x.role === 'tool' && x.toolCallId !== undefined && sectionOfCall.has(x.toolCallId)) {
          expect(sectionOfCall.get(x.toolCallId)).toBe(s.id);
        }
      }
    }

    // The first real user instruction is read as one (when the file has one and it is still live).
    const first = firstRealInstruction(file);
    if (first !== undefined && live.has(first)) {
      const sec = secs.find((s) => s.messageIds.includes(first));
      expect(sec?.kind).toBe('user-instruction');
      expect(sec?.priority === 'critical' || sec?.priority === 'high').toBe(true);
    }
  });

  it('finds a first real user instruction in nearly every transcript', () => {
    const without = FILES.filter((f) => firstRealInstruction(f) === undefined);
    // Only sub-agent files that start with the assistant have none.
    expect(without.length).toBeLessThanOrEqual(1);
    expect(m2goalCount()).toBeGreaterThanOrEqual(FILES.length - 1);
  });

  it('calibration brings our count closer to what the agent reported', () => {
    let checked = 0;
    for (const file of FILES) {
      const m = buildShared(file);
      const c = m.calibration();
      if (c.samples < 2 || c.reportedTokens === undefined || c.countedTokens !== m.tokens()) continue;
      checked++;
      expect(Math.abs(c.estimatedTokens - c.reportedTokens)).toBeLessThan(Math.abs(m.tokens() - c.reportedTokens));
    }
    expect(checked).toBeGreaterThanOrEqual(3);
  });

  it.each(FILES)('%s: scoring is the same whether read incrementally or once', (file) => {
    const events = read.get(file)?.events ?? [];
    const inc = new SessionModel({ sessionId: file, tokenCounter: counter });
    events.forEach((e, i) => {
      inc.apply(e);
      if (i % 7 === 0) inc.sections();
    });
    const once = buildShared(file);
    const strip = (s: readonly Section[]): unknown[] => s.map((x) => ({ ...x }));
    expect(strip(inc.sections())).toEqual(strip(once.sections()));
  });

  it.each(FILES)('%s: replacing the lowest-scoring sections keeps totals consistent', (file) => {
    const m = build(file);
    // Reasoning that shares its message with a live tool call is left out here: compacting it
    // alone miscounts the message overhead (the known bug marked `fails` in session.test.ts).
    const sharesMessage = (s: Section): boolean => s.kind === 'reasoning' && m.sections().some((o) => o.id !== s.id && o.messageIds.some((id) => s.messageIds.includes(id)));
    const victims = [...m.sections()]
      .filter((s) => !s.anchor && !s.pending && !sharesMessage(s))
      .sort((a, b) => a.score - b.score)
      .slice(0, 5);
    if (victims.length === 0) return;
    const before = m.tokens();
    const removed = victims.reduce((a, s) => a + s.tokens, 0);
    const summary = m.replaceSections(
      victims.map((s) => s.id),
      { text: `[contextd archived h-${file.length}] ${victims.length} sections elided`, editId: 'e1', handle: 'h', reason: 'low-score' },
    );
    expect(m.tokens()).toBe(before - removed + summary.tokens);
    expect(m.sections().reduce((a, s) => a + s.tokens, 0)).toBe(m.tokens());
    for (const v of victims) expect(m.section(v.id)).toBeUndefined();
    expect(m.messages().filter((x) => x.id === 'summary:e1')).toHaveLength(1);
    const rebuilt = new SessionModel({ sessionId: file, tokenCounter: counter });
    rebuilt.applyAll(m.messages().map((message) => ({ type: 'message' as const, message })));
    expect(rebuilt.tokens()).toBe(m.tokens());
  });
});

function m2goalCount(): number {
  return FILES.filter((f) => buildShared(f).goal().sectionId !== undefined).length;
}
