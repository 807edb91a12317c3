/**
 * "Summaries must be true" across plans: once a pointer summary ("A later identical call
 * returned the same output.") is applied, it sits in the agent's context; a later plan must not
 * take the output it points at out of view — unless a pointer that carries the claim on (to a
 * still later identical output) replaces it. Plan → apply → append → plan again, tighter.
 */
import { describe, expect, it } from 'vitest';
import { applyPlan, planCompaction } from '../../src/compact/planner.js';
import { appliedPointers } from '../../src/compact/pointers.js';
import type { Plan } from '../../src/compact/types.js';
import { rebaseModel, replayModel } from '../../src/daemon/replay-log.js';
import type { TranscriptEvent } from '../../src/model/messages.js';
import { SessionModel } from '../../src/model/index.js';
import { Script, fileBody } from './helpers.js';

const fixedNow = () => 1_700_000_000_000;
const SAME = /later identical call returned the same output/;
const SKILL = fileBody('skill', 40);

/** A skill file read twice (the same output), then, appended later, other work and (`third`) a third read. */
function session(third: boolean): { events: TranscriptEvent[]; split: number } {
  const s = new Script().system('You are a coding agent.').user('Follow the skill in docs/SKILL.md to release the package.');
  s.assistant('Reading the skill.').tool('read_file', { path: 'docs/SKILL.md' }, SKILL).assistant('Read it once.');
  // a standing constraint (an anchor): the first read's summary is never merged with the second read
  s.user('Always keep the changelog in the same commit as the version bump; never publish from a dirty tree.');
  s.assistant('Reading it again to be sure.').tool('read_file', { path: 'docs/SKILL.md' }, SKILL).assistant('The same as before.');
  const split = s.events.length;
  s.user('Now bump the version and write the changelog.');
  for (let i = 0; i < 4; i++) {
    s.assistant(`Looking at part ${i} of the package.`);
    s.tool('read_file', { path: `src/part${i}.ts` }, fileBody(`part${i}x`, 50));
    s.assistant(`Part ${i} needs no change.`);
  }
  if (third) s.assistant('Checking the skill once more.').tool('read_file', { path: 'docs/SKILL.md' }, SKILL).assistant('Unchanged.');
  s.user('Now publish it.');
  return { events: s.events, split };
}

/**
 * Summaries in view that say a later identical call returned the same output while no later
 * message in view shows that output (the agent would read a claim it cannot check).
 */
function lying(model: SessionModel): string[] {
  const ms = model.messages();
  return ms.filter((m, i) => m.isSummary && SAME.test(m.text) && !ms.slice(i + 1).some((n) => n.role === 'tool' && n.text === SKILL)).map((m) => m.id);
}

/** The first plan: only the first read goes, as a pointer at the second (applied). */
async function firstPlan(model: SessionModel): Promise<Plan> {
  const first = model.sections().find((x) => model.messagesOf(x.id).some((m) => m.role === 'tool' && m.text === SKILL))!;
  const plan = await planCompaction(model, { mode: 'manual', targetTokens: model.tokens() - Math.floor(first.tokens * 0.6), now: fixedNow });
  expect(plan.edits.map((e) => [e.replaces, e.reason])).toEqual([[[first.id], 'redundant-tool-output']]);
  expect(plan.edits[0]?.summary.content).toMatch(SAME);
  return plan;
}

/** A plan to `share` of the model's size, applied; no summary in view lies after it. */
async function tighten(model: SessionModel, share: number): Promise<Plan> {
  const plan = await planCompaction(model, { mode: 'manual', targetTokens: Math.floor(model.tokens() * share), now: fixedNow });
  applyPlan(model, plan);
  expect(lying(model), `after the plan to ${share}`).toEqual([]);
  return plan;
}

/** Outputs of the skill file in view. */
const skillOutputs = (model: SessionModel): number => model.messages().filter((m) => m.role === 'tool' && m.text === SKILL).length;

/**
 * The session (`thirdRead`: with a third identical read) read up to its split, its first plan
 * (a pointer summary) applied, then the rest read: the model and the applied summary's message id.
 */
async function withAppliedPointer(thirdRead: boolean): Promise<{ model: SessionModel; summaryId: string }> {
  const { events, split } = session(thirdRead);
  const model = new SessionModel({ sessionId: 'test-session', budgetTokens: 100_000 });
  model.applyAll(events.slice(0, split));
  const plan = await firstPlan(model);
  applyPlan(model, plan);
  const summaryId = `summary:${plan.edits[0]!.editId}`;
  model.applyAll(events.slice(split));
  return { model, summaryId };
}

describe('an applied pointer summary stays true under later plans', () => {
  it('keeps the output it points at in view', async () => {
    const { model, summaryId } = await withAppliedPointer(false);
    const next = await tighten(model, 0.5);
    expect(next.edits.length).toBeGreaterThan(0);
    // the pointer is still in view, and so is the output it points at
    expect(model.messages().some((m) => m.id === summaryId)).toBe(true);
    expect(skillOutputs(model)).toBe(1);
    // tighter still: the output leaves only with the summary pointing at it (merged into a span summary)
    await tighten(model, 0.3);
    await tighten(model, 0.15);
  });

  it('lets a later pointer carry the claim on to a still later identical output', async () => {
    const { model, summaryId } = await withAppliedPointer(true);
    const next = await tighten(model, 0.6);
    // the second read became a pointer too, carrying the first one's claim on to the third
    expect(next.edits.filter((e) => e.reason === 'redundant-tool-output')).toHaveLength(1);
    expect(model.messages().some((m) => m.id === summaryId)).toBe(true);
    expect(model.messages().filter((m) => m.isSummary && SAME.test(m.text))).toHaveLength(2);
    expect(skillOutputs(model)).toBe(1);
    await tighten(model, 0.3);
    await tighten(model, 0.15);
  });

  it('holds for a model replayed from the plan log, and for one rebuilt from its messages', async () => {
    const { events, split } = session(false);
    const fresh = (): SessionModel => new SessionModel({ sessionId: 'test-session', budgetTokens: 100_000 });
    const planned = fresh();
    planned.applyAll(events.slice(0, split));
    const made = await firstPlan(planned);
    // as the plan log stores it (JSON) and a restarted daemon replays it
    const stored = JSON.parse(JSON.stringify(made)) as Plan;
    const replayed = await replayModel(fresh, events, [split], [{ kind: 'edits', offset: 0, plan: stored, editIds: stored.edits.map((e) => e.editId) }]);
    expect(lying(replayed)).toEqual([]);
    const rebuilt = rebaseModel(replayed, fresh());
    for (const model of [replayed, rebuilt]) {
      await tighten(model, 0.5);
      expect(model.messages().some((m) => m.id === `summary:${made.edits[0]!.editId}`)).toBe(true);
      expect(skillOutputs(model)).toBe(1);
      await tighten(model, 0.3);
      await tighten(model, 0.15);
    }
  });

  it('still reaches a tight target when applied pointers rest on most of the context: an output goes with the summaries pointing at it', async () => {
    // 30 files each read twice, the first reads applied as pointers at the second: the second
    // reads are most of what is left, and an applied summary rests on each. (Before, the plan to
    // 60% ended at 94% of the size: no second read could go while its pointer stayed.)
    const s = new Script().system('You are a coding agent.').user('Review every module of the package and list what each exports.');
    const files = Array.from({ length: 30 }, (_, i) => ({ path: `src/mod${i}.ts`, body: fileBody(`mod${i}x`, 30) }));
    for (const f of files) s.assistant(`Reading ${f.path}.`).tool('read_file', { path: f.path }, f.body);
    s.user('Never change a public export; check each module once more before the summary.');
    for (const f of files) s.assistant(`Checking ${f.path} again.`).tool('read_file', { path: f.path }, f.body);
    s.user('Now write the summary.');
    const model = new SessionModel({ sessionId: 'test-session', budgetTokens: 200_000 });
    model.applyAll(s.events);
    const firstReads = model.sections().filter((x) => files.some((f) => model.messagesOf(x.id).some((m) => m.role === 'tool' && m.text === f.body))).slice(0, files.length);
    const pointers = await planCompaction(model, { mode: 'manual', targetTokens: model.tokens() - Math.floor(firstReads.reduce((n, x) => n + x.tokens, 0) * 0.9), now: fixedNow });
    applyPlan(model, pointers);
    expect(appliedPointers(model.sections(), (id) => model.messagesOf(id)).length).toBeGreaterThanOrEqual(25);

    for (const share of [0.6, 0.4]) {
      const target = Math.floor(model.tokens() * share);
      const tight = await planCompaction(model, { mode: 'manual', targetTokens: target, now: fixedNow, idPrefix: `t${share}_` });
      expect(tight.tokensAfter, `the plan to ${share}`).toBeLessThanOrEqual(target);
      applyPlan(model, tight);
      // every pointer summary still in view has what it rests on in view
      const inView = model.sections().filter((x) => x.compacted === true && model.messagesOf(x.id)[0]?.pointer !== undefined);
      expect(appliedPointers(model.sections(), (id) => model.messagesOf(id))).toHaveLength(inView.length);
      expect(model.messages().filter((m) => m.isSummary && SAME.test(m.text)).length).toBe(inView.length);
    }
  });

  it('follows a section it rests on that grew: a call still waiting for its result when the summary was made', async () => {
    const s = new Script().system('You are a coding agent.').user('Fix the parser bug in src/parse.ts.');
    s.assistant('Reading the parser.').tool('read_file', { path: 'src/parse.ts' }, fileBody('parse', 60));
    s.assistant('Reading the lexer.').tool('read_file', { path: 'src/lex.ts' }, fileBody('lex', 60));
    s.assistant('Reading the parser again after the change.').pendingCall('read_file', { path: 'src/parse.ts' });
    const model = s.model({ budgetTokens: 100_000 });
    const plan = await planCompaction(model, { mode: 'manual', targetTokens: model.tokens() - 600, now: fixedNow });
    const stale = plan.edits.find((e) => e.reason === 'stale-read');
    // the later read, pending then, is the one message its basis names
    expect(stale?.pointer?.reliesOn).toEqual([['m9']]);
    applyPlan(model, plan);
    // its result comes: the section holding the later read is now the call and its result
    model.applyAll([{ type: 'message', message: { id: 'm10', role: 'tool', text: fileBody('parse2', 60), toolCallId: 'c2', toolName: 'read_file' } }]);
    const later = model.sections().find((x) => x.messageIds.includes('m9'));
    expect(later?.messageIds).toEqual(['m9', 'm10']);
    expect(appliedPointers(model.sections(), (id) => model.messagesOf(id))).toEqual([expect.objectContaining({ ends: [later?.id] })]);
    // and a tight plan keeps it in view, or takes the summary resting on it along
    const tight = await planCompaction(model, { mode: 'manual', targetTokens: Math.floor(model.tokens() * 0.3), now: fixedNow, idPrefix: 't_' });
    applyPlan(model, tight);
    const summaryInView = model.messages().some((m) => m.id === `summary:${stale?.editId}`);
    expect(!summaryInView || model.messages().some((m) => m.id === 'm10'), 'the stale-read summary is in view without the later read').toBe(true);
  });

  it('refuses a plan made before the pointer was applied that would take its output', async () => {
    const { events } = session(false);
    const model = new SessionModel({ sessionId: 'test-session', budgetTokens: 100_000 });
    model.applyAll(events);
    const reads = model.sections().filter((x) => model.messagesOf(x.id).some((m) => m.role === 'tool' && m.text === SKILL));
    // made first, applied second: a tight plan that replaces the second read (not as a pointer), the first left as it is
    const declined = { sectionIds: new Set([reads[0]!.id]), keepTokens: 0 };
    const tight = await planCompaction(model, { mode: 'manual', targetTokens: Math.floor(model.tokens() * 0.15), now: fixedNow, idPrefix: 't_', declined });
    const second = tight.edits.find((e) => e.replaces.includes(reads[1]!.id));
    expect(second?.reason).toBe('low-score');
    const pointer = await planCompaction(model, { mode: 'manual', targetTokens: model.tokens() - Math.floor(reads[0]!.tokens * 0.6), now: fixedNow });
    expect(pointer.edits.map((e) => e.reason)).toEqual(['redundant-tool-output']);
    applyPlan(model, pointer);
    expect(() => applyPlan(model, tight, [second!.editId])).toThrow(/applied summary points at/);
    expect(lying(model)).toEqual([]);
  });
});
