import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { SessionManager } from '../../src/daemon/sessions.js';
import { Archive, HeadroomLog, PlanLog, openDb, type Db } from '../../src/store/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { createSummarizer, replacementOf, type Plan } from '../../src/compact/index.js';
import { SessionModel } from '../../src/model/index.js';
import { rebaseModel } from '../../src/daemon/replay-log.js';
import { createOpenAIChatAdapter } from '../../src/ingest/adapters/openai-chat.js';
import { demoTranscript } from '../../src/demo/transcript.js';
import type { TranscriptEvent } from '../../src/model/messages.js';
import { redactMessages } from '../../src/harvest/index.js';

// "Secrets never stored or logged verbatim": archived originals are redacted (archive.redactSecrets),
// and so must be the plan itself where it quotes them — its extractive summaries and the survival
// check's facts — in plan_bodies and in the "compaction planned" line. A plan stored redacted
// still replays to the model the agent holds: the same tokens (found by an audit of the plan log).

const dirs: string[] = [];
const dbs: Db[] = [];
const managers: SessionManager[] = [];
afterEach(async () => {
  for (const m of managers.splice(0)) await m.drain();
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

// Made-up keys in vendor shapes (split so no scanner mistakes this file for a leak).
const AWS_SECRET = 'Hjn' + 'OgXbqVslqAi1icOHM/MB6OL8nIgVlEq1FoPxv';
const SLACK = 'xoxp-' + '1111111111-2222222222-' + 'VccS5NFW5q77fOOkvin5J7wX';

function planted(rounds: number): TranscriptEvent[] {
  const adapter = createOpenAIChatAdapter();
  const events = demoTranscript({ rounds }).flatMap((l, i) => adapter.parseLine(JSON.parse(JSON.stringify(l)) as Record<string, unknown>, i * 1000));
  return events.map((e) =>
    e.type === 'message' && e.message.role === 'tool'
      ? { ...e, message: { ...e.message, text: `${e.message.text}\naws_secret_access_key=${AWS_SECRET}\nError: authentication failed for token ${SLACK}` } }
      : e,
  );
}

describe('the plan log and its log lines', () => {
  it('store and log no secret the archive redacts, and a stored plan replays to the tokens the agent holds', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-plan-secrets-'));
    dirs.push(dir);
    const db = openDb(join(dir, 'contextd.db'));
    dbs.push(db);
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        cb();
      },
    });
    const logger = pino({ level: 'info' }, sink);
    const options = { budgetTokens: 20_000, reserveRatio: 0.15, softWatermark: 0.6, hysteresis: 0.1, minPlanIntervalMs: 0, turnSliceMs: 0 };
    const manager = new SessionManager(
      options,
      { logger, tokenCounter: createTokenCounter(), summarizer: createSummarizer({ kind: 'extractive' }, { logger }), headroomLog: new HeadroomLog(db), archive: new Archive(db), plans: new PlanLog(db), memoryFreed: () => undefined, archiveFilter: redactMessages },
    );
    managers.push(manager);
    const planned = new Promise<Plan>((resolve) => manager.once('plan', (_s, plan) => resolve(plan)));
    manager.ingest('/t/k.jsonl', 'k', 'openai-chat', planted(10));
    const plan = await planned;
    expect(plan.edits.length).toBeGreaterThan(0);
    // The archive holds them redacted, as promised.
    const archived = (db.prepare('SELECT messages FROM archive').all() as { messages: string }[]).map((r) => r.messages).join('\n');
    expect(archived).not.toContain(AWS_SECRET);
    expect(archived).not.toContain(SLACK);
    // The plan log and the daemon's log must not hold them either.
    const bodies = (db.prepare('SELECT plan FROM plan_bodies').all() as { plan: string }[]).map((r) => r.plan).join('\n');
    expect(bodies).not.toContain(AWS_SECRET);
    expect(bodies).not.toContain(SLACK);
    const log = lines.join('\n');
    expect(log).not.toContain(AWS_SECRET);
    expect(log).not.toContain(SLACK);
    // the agent applies the plan it was sent (secrets and all) ...
    const counter = createTokenCounter();
    manager.acknowledge(plan.planId, true, undefined, undefined);
    const held = manager.require('k').model.headroom().countedTokens;
    // ... and a rebuild replays the plan as stored: redacted, yet counted as the agent holds it
    const stored = new PlanLog(db).get(plan.planId)?.plan as Plan;
    expect(JSON.stringify(stored)).toContain('[REDACTED:');
    const rebuilt = new SessionModel({ sessionId: 'k', tokenCounter: counter, budgetTokens: 20_000 });
    rebuilt.applyAll(planted(10));
    rebuilt.replayEach(stored.edits.map((e) => ({ ...replacementOf(e), tokens: e.tokensBefore, messageRange: e.messageRange })));
    expect(rebuilt.headroom().countedTokens).toBe(held);
    // A new budget (SIGHUP) rebuilds the model from its own messages, and a later rebuild replays
    // that step (replay-log.ts: rebaseModel) after the edits: the redacted summary must still count
    // as the agent holds it, not as its stored text does (14,286 against 14,846 without `countAs`).
    manager.reconfigure({ ...options, budgetTokens: 21_000 });
    const heldAfterRebase = manager.require('k').model.headroom().countedTokens;
    expect(heldAfterRebase).toBe(held);
    const rebased = rebaseModel(rebuilt, new SessionModel({ sessionId: 'k', tokenCounter: counter, budgetTokens: 21_000 }));
    expect(rebased.headroom().countedTokens).toBe(heldAfterRebase);
    await manager.drain();
  });
});
