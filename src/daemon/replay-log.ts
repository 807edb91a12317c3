/**
 * What a tailed session's model holds besides its transcript, and how it is rebuilt from both.
 *
 * A model is its transcript's lines applied in order, plus what happened to it between two batches
 * of lines: the edits the agent applied (a plan's, all or some of them) and rebuilds from its own
 * messages (the budget was reconfigured). Section ids count on through all of it (a summary takes
 * the next id, lines after it the ones after), so the same model comes back only when the same
 * steps are replayed between the same lines: the transcript up to the offset of the first step,
 * that step, the lines up to the next, … and the rest. The steps are kept here in order, each with
 * the transcript offset the model had been read to when it happened; an applied plan's body and
 * chosen edits come from the plan log in SQLite (`plans`, where they were stored when the agent
 * acknowledged it), never from memory: a plan kept in memory would keep its originals too.
 *
 * When a step cannot be replayed (its offset is not known, its plan's row is missing or does not
 * match), the log says so (`unreplayable`): the session is then never released from memory.
 */
import { replacementOf, type Plan } from '../compact/index.js';
import type { SessionModel } from '../model/index.js';
import type { TranscriptEvent } from '../model/messages.js';
import type { ModelStep, ModelSteps, PlanLog } from '../store/index.js';
import { describeError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';

export type { ModelStep };

/** A step ready to replay: an applied plan with its body and the edits chosen, read from the plan log. */
export type ResolvedStep = { readonly kind: 'edits'; readonly offset: number; readonly plan: Plan; readonly editIds: readonly string[] } | { readonly kind: 'rebase'; readonly offset: number };

/**
 * Where a session's steps are kept across daemon restarts (SQLite `model_steps`), written as
 * they happen. Its methods never throw: a write that fails is the sink's to report.
 */
export interface StepSink {
  /** Step `seq` of the list (0: a new list, whatever was kept before is dropped). */
  append(seq: number, step: ModelStep): void;
  unreplayable(why: string): void;
  clear(): void;
}

/**
 * The sink of `sessionId`'s steps in `store`. The first step of a new list (seq 0) drops
 * whatever was kept before it. A write that fails is logged, and the session is marked as one
 * whose steps cannot be replayed; the later steps of that list are not written (when the mark
 * fails too, it is tried again at each of them, and the gap left in `seq` says so meanwhile).
 */
export function keptStepSink(store: ModelSteps, sessionId: string, log: Logger): StepSink {
  // A step of the current list is not kept: later ones are not written (an INSERT OR REPLACE
  // must never fill the gap with a step of another list), and the "cannot be replayed" marker
  // is tried again at each of them until it is written.
  let skipping = false;
  let lost: string | undefined;
  const mark = (why: string): void => {
    try {
      store.markUnreplayable(sessionId, why);
      lost = undefined;
    } catch {
      lost = why; // the store cannot be written now: tried again at the next step
    }
  };
  const failed = (err: unknown): void => {
    log.warn({ sessionId, err: describeError(err) }, 'model step not kept: after a restart this session is rebuilt from its transcript alone (or without its latest edits)');
    mark(`a model step could not be kept: ${describeError(err)}`);
    skipping = true;
  };
  return {
    append: (seq, step) => {
      if (seq === 0) skipping = false;
      else if (skipping) {
        if (lost !== undefined) mark(lost);
        return;
      }
      try {
        if (seq === 0) store.clear(sessionId);
        store.append(sessionId, seq, step);
      } catch (err) {
        failed(err);
      }
    },
    unreplayable: (why) => {
      try {
        store.markUnreplayable(sessionId, why);
      } catch (err) {
        failed(err);
      }
    },
    clear: () => {
      try {
        store.clear(sessionId);
        skipping = false;
        lost = undefined;
      } catch (err) {
        log.warn({ sessionId, err: describeError(err) }, 'kept model steps not cleared');
        // the old steps must not be replayed with a model built without them
        mark(`kept model steps could not be cleared: ${describeError(err)}`);
        skipping = true;
      }
    },
  };
}

/** The steps of one session's model since it was last built from its transcript alone. */
export class ReplayLog {
  private list: ModelStep[];
  private why: string | undefined;

  /** `steps`: those kept by an earlier run (already in `sink`), to replay at start. */
  constructor(
    private readonly sink?: StepSink,
    steps: readonly ModelStep[] = [],
  ) {
    this.list = [...steps];
  }

  /** The steps in the order they happened (offsets never decrease). */
  get steps(): readonly ModelStep[] {
    return this.list;
  }

  /** Why the model cannot be rebuilt from its transcript and these steps, or undefined when it can. */
  get unreplayable(): string | undefined {
    return this.why;
  }

  /** The agent applied edits of `planId` to the model read to `offset` (undefined: not known). */
  applied(planId: string, offset: number | undefined): void {
    this.push(offset === undefined ? undefined : { kind: 'edits', planId, offset }, `edits of plan ${planId} were applied at an unknown transcript offset`);
  }

  /** The model read to `offset` was rebuilt from its own messages (undefined: not known). */
  rebased(offset: number | undefined): void {
    this.push(offset === undefined ? undefined : { kind: 'rebase', offset }, 'the model was rebuilt from its messages at an unknown transcript offset');
  }

  /** The model can no longer be rebuilt from its transcript and steps (the first reason is kept). */
  markUnreplayable(why: string): void {
    if (this.why !== undefined) return;
    this.why = why;
    this.sink?.unreplayable(why);
  }

  /** The model was built from its transcript alone (the transcript was rewritten): nothing to replay. */
  clear(): void {
    this.list = [];
    this.why = undefined;
    this.sink?.clear();
  }

  private push(step: ModelStep | undefined, why: string): void {
    const last = this.list.at(-1);
    if (!step) this.markUnreplayable(why);
    else if (last && step.offset < last.offset) this.markUnreplayable(`a step at transcript offset ${step.offset} follows one at ${last.offset}`);
    else {
      this.list.push(step);
      this.sink?.append(this.list.length - 1, step);
    }
  }
}

const APPLIED = new Set(['applied', 'partially-applied']);

/**
 * Why the plan log cannot replay `steps` (a plan's row missing, not applied, or stored with other
 * edits or another offset than the step), or undefined when it can. Reads no plan body (cheap: it
 * is asked before a session is released). Throws STORE_FAILED or STORE_FULL when the plan log
 * cannot be read now: that says nothing about the rows (retry), unlike a reason returned.
 */
export function checkSteps(steps: readonly ModelStep[], plans: PlanLog): string | undefined {
  for (const step of steps) {
    if (step.kind !== 'edits') continue;
    const at = plans.appliedAt(step.planId);
    if (!at) return `plan ${step.planId} is not in the plan log`;
    if (!APPLIED.has(at.status)) return `plan ${step.planId} is ${at.status} in the plan log, not applied`;
    if (at.editIds === undefined) return `the plan log holds no applied edits of plan ${step.planId}`;
    if (at.offset !== step.offset) return `plan ${step.planId} was applied at transcript offset ${step.offset}, the plan log says ${String(at.offset)}`;
  }
  return undefined;
}

/**
 * `steps` with their plans and chosen edits read from the plan log, or why they cannot be replayed
 * (a row missing or corrupt: for good). Throws STORE_FAILED or STORE_FULL when the plan log cannot
 * be read now (e.g. SQLITE_BUSY): the rows may be fine, so the caller retries later.
 */
export function resolveSteps(steps: readonly ModelStep[], plans: PlanLog): ResolvedStep[] | string {
  const why = checkSteps(steps, plans);
  if (why !== undefined) return why;
  const out: ResolvedStep[] = [];
  for (const step of steps) {
    if (step.kind === 'rebase') {
      out.push(step);
      continue;
    }
    const stored = plans.get(step.planId);
    const plan = stored?.plan as Plan | undefined;
    const editIds = stored?.appliedEditIds;
    if (!plan || !editIds || !isPlanBody(plan)) return `plan ${step.planId} in the plan log is not a plan`;
    const known = new Set(plan.edits.map((e) => e.editId));
    const missing = editIds.filter((id) => !known.has(id));
    if (missing.length > 0) return `plan ${step.planId} in the plan log has no edits ${missing.join(', ')}`;
    out.push({ kind: 'edits', offset: step.offset, plan, editIds });
  }
  return out;
}

/** Whether a parsed plan body has what applying its edits reads. */
function isPlanBody(p: unknown): p is Plan {
  const edits = (p as { edits?: unknown }).edits;
  if (typeof (p as { planId?: unknown }).planId !== 'string' || !Array.isArray(edits)) return false;
  return edits.every((e: Partial<Plan['edits'][number]> | null) => {
    if (typeof e !== 'object' || e === null) return false;
    const { editId, replaces, summary, handle, reason } = e;
    return typeof editId === 'string' && typeof handle === 'string' && typeof reason === 'string' && Array.isArray(replaces) && replaces.every((id) => typeof id === 'string') && typeof summary?.content === 'string';
  });
}

/** A model rebuilt from `model`'s own messages into `fresh` (how a reconfigured budget takes effect). */
export function rebaseModel(model: SessionModel, fresh: SessionModel): SessionModel {
  const h = model.headroom();
  fresh.applyAll([
    { type: 'meta', meta: model.meta() },
    ...model.messages().map((message) => ({ type: 'message' as const, message })),
    ...(h.reportedTokens !== undefined ? [{ type: 'usage' as const, contextTokens: h.reportedTokens }] : []),
  ]);
  return fresh;
}

/**
 * Rebuild a model: `events` read from the transcript, split at the offset of each step
 * (`splits[i]`: the index of the first event past `steps[i].offset`), with each step applied at its
 * place. `fresh` makes an empty model (the first, and one per rebase). `pause` is asked before
 * each step and each run of lines (a long transcript is applied in several turns of the event
 * loop). An edit is replayed without scoring the model (`SessionModel.replayEach`), and throws
 * PLAN_EXPIRED when it does not stand: the model is not the one the step was taken on.
 */
export async function replayModel(fresh: () => SessionModel, events: readonly TranscriptEvent[], splits: readonly number[], steps: readonly ResolvedStep[], pause: () => Promise<void> | undefined = () => undefined): Promise<SessionModel> {
  let model = fresh();
  let from = 0;
  for (const [i, step] of steps.entries()) {
    const to = splits[i] ?? events.length;
    if (to > from) {
      await pause();
      model.applyAll(events.slice(from, to));
    }
    from = Math.max(from, to);
    await pause();
    if (step.kind === 'rebase') model = rebaseModel(model, fresh());
    else {
      const chosen = new Set(step.editIds);
      model.replayEach(step.plan.edits.filter((e) => chosen.has(e.editId)).map((e) => ({ ...replacementOf(e), tokens: e.tokensBefore, messageRange: e.messageRange })));
    }
  }
  if (from < events.length) {
    await pause();
    model.applyAll(events.slice(from));
  }
  return model;
}
