/**
 * "Summaries must be true: never cite what the agent can no longer see." A redundant-output or
 * stale-read summary points at a later read ("A later identical call returned the same
 * output.", "the file was read again or edited later"): some later read must stay in view.
 */
import { describe, expect, it } from 'vitest';
import { applyPlan, planCompaction, planStanding } from '../../src/compact/planner.js';
import type { Plan } from '../../src/compact/types.js';
import type { SessionModel } from '../../src/model/index.js';
import { isContextdError } from '../../src/util/errors.js';
import { Script, fileBody } from './helpers.js';

const fixedNow = () => 1_700_000_000_000;
const POINTER = /later identical call|read again/;

/** A file read three times (the same output each time), around a few short turns. */
function readThrice(): Script {
  const s = new Script().system('You are a coding agent.').user('Follow the skill in docs/SKILL.md to release the package.');
  for (let i = 0; i < 3; i++) {
    s.assistant(`Checking the skill again (pass ${i}).`);
    s.tool('read_file', { path: 'docs/SKILL.md' }, fileBody('skill', 40));
    s.assistant(`Pass ${i} done; nothing else to read.`);
  }
  return s.user('Now publish it.');
}

/** A listing, then a file read three times with new content each time (a stale-read chain). */
function changingReads(): Script {
  const s = new Script().system('You are a coding agent.').user('Keep src/config.ts in sync with the generator, then report.');
  s.tool('Bash', { command: 'ls -R src' }, fileBody('listing', 60));
  s.assistant('Listed the sources.');
  for (let i = 0; i < 3; i++) {
    s.assistant(`Reading the generated config (pass ${i}).`);
    s.tool('Read', { file_path: 'src/config.ts' }, fileBody(`gen${i}v`, 40));
    s.assistant(`Pass ${i} read.`);
  }
  return s.user('Now write the report.');
}

/** Sections holding a read call, in order. */
function reads(model: SessionModel): string[] {
  return model
    .sections()
    .filter((x) => model.messagesOf(x.id).some((m) => m.toolCalls?.some((c) => /read/i.test(c.name))))
    .map((x) => x.id);
}

/** Edits whose summary points at a later read though the plan replaces every later read. */
function lyingPointers(model: SessionModel, plan: Plan): string[] {
  const replaced = new Set(plan.edits.flatMap((e) => e.replaces));
  const order = reads(model);
  return plan.edits
    .filter((e) => POINTER.test(e.summary.content))
    .filter((e) => {
      const last = Math.max(...e.replaces.map((id) => order.indexOf(id)));
      return order.slice(last + 1).every((id) => replaced.has(id));
    })
    .map((e) => e.editId);
}

describe('pointer summaries stay true', () => {
  it('a file read three times, all three replaced: no summary points at a later read', async () => {
    const model = readThrice().model({ budgetTokens: 100_000 });
    const target = Math.floor(model.tokens() * 0.2);
    const plan = await planCompaction(model, { mode: 'manual', targetTokens: target, now: fixedNow });
    const replaced = new Set(plan.edits.flatMap((e) => e.replaces));
    expect(reads(model).every((id) => replaced.has(id))).toBe(true);
    expect(plan.tokensAfter).toBeLessThanOrEqual(target);
    for (const e of plan.edits) expect(e.summary.content).not.toMatch(POINTER);
  });

  it('keeps the newest read of a chain in view when the rest reaches the target', async () => {
    const model = changingReads().model({ budgetTokens: 100_000 });
    const target = Math.floor(model.tokens() * 0.45);
    const plan = await planCompaction(model, { mode: 'manual', targetTokens: target, now: fixedNow });
    const [first, second, newest] = reads(model);
    const replaced = new Set(plan.edits.flatMap((e) => e.replaces));
    expect(plan.tokensAfter).toBeLessThanOrEqual(target);
    expect(replaced.has(newest!)).toBe(false);
    // the older reads point (through each other) at the newest
    for (const id of [first, second]) expect(plan.edits.find((e) => e.replaces.includes(id!))?.reason).toBe('stale-read');
    expect(lyingPointers(model, plan)).toEqual([]);
  });

  it('holds for every target of both sessions', async () => {
    for (const script of [readThrice, changingReads]) {
      const model = script().model({ budgetTokens: 100_000 });
      for (let share = 0.2; share < 0.7; share += 0.04) {
        const plan = await planCompaction(model, { mode: 'manual', targetTokens: Math.floor(model.tokens() * share), now: fixedNow });
        expect(lyingPointers(model, plan), `target ${share.toFixed(2)}`).toEqual([]);
      }
    }
  });

  it('a plan whose pointer summary rests on a section another edit replaced no longer stands', async () => {
    const model = changingReads().model({ budgetTokens: 100_000 });
    const plan = await planCompaction(model, { mode: 'manual', targetTokens: Math.floor(model.tokens() * 0.6), now: fixedNow });
    const newest = reads(model).at(-1)!;
    expect(plan.edits.some((e) => e.reason === 'stale-read')).toBe(true);
    expect(plan.edits.some((e) => e.replaces.includes(newest))).toBe(false);
    // another plan's edit took the newest read out of view
    model.replaceSections([newest], { text: 'Compacted tool-call (low-score).', role: 'assistant', editId: 'e_other', handle: 'h_0000000000000000', reason: 'low-score' });
    expect(planStanding(model, plan)).toBeUndefined();
    let err: unknown;
    try {
      applyPlan(model, plan);
    } catch (e) {
      err = e;
    }
    expect(isContextdError(err) && err.code).toBe('PLAN_EXPIRED');
  });
});
