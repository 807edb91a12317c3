/**
 * Pointer summaries, and the rule that keeps them true: "never cite what the agent can no
 * longer see". A `redundant-tool-output` summary says "a later identical call returned the
 * same output", a `stale-read` one "the file was read again or edited later": each points at
 * a newer section (`detail.newer`, `detail.supersededBy`) instead of keeping the content. Such
 * a summary is true only while what it points at stays in view — or is itself replaced by a
 * pointer that carries the claim on (`passesThrough`) to a section that does.
 *
 * Selection (select.ts) keeps the sections pointed at out of a plan while the budget allows
 * (the newest of a chain stays visible); when it cannot, the pointer that would lie becomes a
 * self-contained summary of its own content (`standAlone`), as a low-score one is.
 *
 * Once applied, a pointer summary keeps resting on what it points at: its edit records the
 * sections its claim rests on (`PointerBasis`, by message ids, kept on the summary message and
 * in the stored plan, so a replay or a rebuild knows it). Later plans (`appliedPointers`) keep
 * those sections in view, or replace one only by a pointer that carries the claim on, whose
 * basis then names the sections it rests on in turn; never by anything else, even when the
 * target is missed (the summary in the agent's context cannot be made to stand alone).
 */
import type { Message, PointerBasis } from '../model/messages.js';
import type { Section } from '../model/types.js';
import type { EditReason, Unit } from './types.js';

/** Detail fields naming the sections a pointer summary points at (ids: never summarized). */
export const POINTER_FIELDS: readonly string[] = ['newer', 'supersededBy'];

/** Sections a summary with this detail points at (empty: it stands alone). */
export function pointedAt(detail: Readonly<Record<string, unknown>>): readonly string[] {
  const out: string[] = [];
  for (const field of POINTER_FIELDS) {
    const v = detail[field];
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) for (const id of v) if (typeof id === 'string') out.push(id);
  }
  return out;
}

/** The unit summarized on its own: its gist, as a low-score summary keeps it, with no pointer. */
export function standAlone(u: Unit): Unit {
  return { ...u, reason: 'low-score', detail: { score: u.section.score }, group: 0 };
}

/**
 * Whether `from`'s claim still holds when the section it points at, `via`, is replaced too,
 * as long as what `via` points at stays in view. A stale read stays stale when a later read
 * of the path is itself superseded: a still later access shows the file. A redundant output
 * stays redundant when `via`'s output is wholly in its own newer one (no `except` lines):
 * `from`'s lines, but for its own `except`, are then in view there.
 */
function passesThrough(from: Pick<Unit, 'reason'>, via: Unit): boolean {
  return carriesOn(from.reason, { reason: via.reason, partial: hasExcept(via) });
}

/** `passesThrough` for a claim of `reason` and a pointer summary `via` (planned or applied). */
function carriesOn(reason: string, via: Pick<PointerBasis, 'reason' | 'partial'>): boolean {
  if (reason === 'stale-read') return via.reason === 'stale-read' || via.reason === 'redundant-tool-output';
  if (reason === 'redundant-tool-output') return via.reason === 'redundant-tool-output' && via.partial !== true;
  return false;
}

function hasExcept(u: Unit): boolean {
  const except = u.detail['except'];
  return Array.isArray(except) && except.length > 0;
}

/**
 * Units whose summaries point at a section no longer in `sections` (replaced by an earlier
 * edit, or gone) stand alone; the others are returned as they are.
 */
export function withLiveTargets(units: readonly Unit[], sections: readonly Section[]): Unit[] {
  const live = new Set(sections.map((s) => s.id));
  return units.map((u) => (pointedAt(u.detail).every((id) => live.has(id)) ? u : standAlone(u)));
}

/**
 * The pointers among a selection's units, kept true while it grows: which units point at a
 * section, so taking a section a chosen pointer relies on can be refused; and the sections
 * applied pointer summaries rest on (`appliedPointers`), which are always in force.
 */
export class PointerGuard {
  /** Units pointing at each section id. */
  private readonly pointers = new Map<string, Unit[]>();
  /** Applied pointers resting on each section id, in view verbatim. */
  private readonly applied = new Map<string, AppliedPointer[]>();
  /** Summaries applied pointers' claims pass through: never taken. */
  private readonly held = new Set<string>();
  /** The applied pointer summaries (their section ids) whose claims rest on, or pass through, each section id. */
  private readonly holders = new Map<string, string[]>();

  constructor(units: readonly Unit[], applied: readonly AppliedPointer[] = []) {
    for (const u of units) {
      for (const id of pointedAt(u.detail)) {
        const list = this.pointers.get(id);
        if (list) list.push(u);
        else this.pointers.set(id, [u]);
      }
    }
    for (const p of applied) {
      for (const id of p.through) this.held.add(id);
      for (const id of p.ends) {
        const list = this.applied.get(id);
        if (list) list.push(p);
        else this.applied.set(id, [p]);
      }
      for (const id of [...p.ends, ...p.through]) {
        const list = this.holders.get(id);
        if (list) list.push(p.id);
        else this.holders.set(id, [p.id]);
      }
    }
  }

  /**
   * Whether every applied summary whose claim rests on `u`'s section is taken too (in `chosen`):
   * the claims then leave the context with their summaries, and `u` may go like any section.
   */
  freed(u: Unit, chosen: { has(id: string): boolean }): boolean {
    const by = this.holders.get(u.section.id);
    return by !== undefined && by.every((id) => chosen.has(id));
  }

  /**
   * `u` with the applied summaries whose claims rest on its section, and theirs in turn (a
   * summary a claim passes through is itself held): what must be taken together for `u` to go.
   * Undefined when one of them is not among `units` (an anchor, a section left out): `u` stays.
   */
  bundleOf(u: Unit, units: ReadonlyMap<string, Unit>): Unit[] | undefined {
    const out = new Map<string, Unit>([[u.section.id, u]]);
    const todo = [u.section.id];
    for (let id = todo.pop(); id !== undefined; id = todo.pop()) {
      for (const holder of this.holders.get(id) ?? []) {
        if (out.has(holder)) continue;
        const h = units.get(holder);
        if (!h) return undefined;
        out.set(holder, h);
        todo.push(holder);
      }
    }
    return [...out.values()];
  }

  /** Whether an applied pointer summary rests on `u`'s section: it is taken only as a pointer that carries the claim on. */
  heldByApplied(u: Unit): boolean {
    return this.held.has(u.section.id) || this.applied.has(u.section.id);
  }

  /** Whether `u`, replaced by its own pointer summary, carries every applied claim resting on its section on. */
  private carriesApplied(u: Unit): boolean {
    if (this.held.has(u.section.id)) return false;
    return (this.applied.get(u.section.id) ?? []).every((p) => passesThrough(p, u));
  }

  /** Whether some chosen pointer, or an applied one, relies on `u`'s section staying in view. */
  pinned(u: Unit, chosen: ReadonlyMap<string, Unit>): boolean {
    if (this.heldByApplied(u) && !this.carriesApplied(u) && !this.freed(u, chosen)) return true;
    return (this.pointers.get(u.section.id) ?? []).some((p) => chosen.get(p.section.id) === p && !passesThrough(p, u));
  }

  /**
   * Whether taking `u` now would make a summary false: a chosen pointer relies on it, or it
   * points at a section already chosen that does not carry its claim on.
   */
  conflicts(u: Unit, chosen: ReadonlyMap<string, Unit>): boolean {
    if (this.pinned(u, chosen)) return true;
    return pointedAt(u.detail).some((id) => {
      const via = chosen.get(id);
      return via !== undefined && !passesThrough(u, via);
    });
  }
}

/**
 * `chosen` (in order) with every pointer that would lie made to stand alone, and, for each
 * pointer kept, the sections in view its claim rests on (`reliesOn`, by section id). A pointer
 * is kept when each section it points at is not chosen (units only point at live sections:
 * `withLiveTargets`), or is chosen as a kept pointer that carries the claim on.
 */
export function keepPointersTrue(chosen: readonly Unit[]): { units: Unit[]; reliesOn: ReadonlyMap<string, readonly string[]> } {
  const byId = new Map(chosen.map((u) => [u.section.id, u] as const));
  // Newest first: a pointer's targets are newer, so they are settled before it.
  const settled = new Map<string, readonly string[] | null>();
  for (const u of [...chosen].sort((a, b) => b.index - a.index)) settled.set(u.section.id, visibleEnds(u, byId, settled));
  const reliesOn = new Map<string, readonly string[]>();
  const units = chosen.map((u) => {
    const ends = settled.get(u.section.id);
    if (ends === null) return standAlone(u);
    if (ends !== undefined && ends.length > 0) reliesOn.set(u.section.id, ends);
    return u;
  });
  return { units, reliesOn };
}

/** The sections in view `u`'s pointer rests on ([] for no pointer), or null when it would lie. */
function visibleEnds(u: Unit, byId: ReadonlyMap<string, Unit>, settled: ReadonlyMap<string, readonly string[] | null>): readonly string[] | null {
  const ends = new Set<string>();
  for (const id of pointedAt(u.detail)) {
    const via = byId.get(id);
    if (!via) {
      ends.add(id);
      continue;
    }
    const through = settled.get(id);
    if (through === undefined || through === null || through.length === 0 || !passesThrough(u, via)) return null;
    for (const end of through) ends.add(end);
  }
  return [...ends];
}

/**
 * A pointer summary already in the context (an applied edit's): the sections its claim rests
 * on now, found from its `PointerBasis`.
 */
export interface AppliedPointer {
  /** The summary's section. */
  readonly id: string;
  readonly reason: EditReason;
  /** Sections in view its claim rests on: replaced only by a pointer summary that carries it on. */
  readonly ends: readonly string[];
  /** Pointer summaries its claim passes through on its way to `ends`: never replaced. */
  readonly through: readonly string[];
}

/**
 * The basis recorded with a kept pointer summary of `reason` and `detail` that replaces
 * `replaced` and rests on `reliesOn` (sections, each by its messages' ids); undefined for a
 * summary that rests on nothing.
 */
export function pointerBasis(reason: EditReason, detail: Readonly<Record<string, unknown>>, reliesOn: readonly (readonly string[])[], replaced: readonly (readonly string[])[]): PointerBasis | undefined {
  if (reliesOn.length === 0 || reliesOn.some((k) => k.length === 0)) return undefined;
  const partial = Array.isArray(detail['except']) && detail['except'].length > 0;
  return { reason, ...(partial ? { partial } : {}), reliesOn, replaced };
}

/** How a `PointerBasis` names a section: by its messages' ids. */
function sectionKey(messageIds: readonly string[]): string {
  return messageIds.join('\u0000');
}

/**
 * The section holding each message id, per section list: built once per scoring of the model
 * (its `sections()` list is the same array until it changes), not on every check of every plan
 * — a plan is checked several times on its way to the agent (`planStanding`).
 */
const sectionOfMessage = new WeakMap<readonly Section[], ReadonlyMap<string, string>>();
function messageIndex(sections: readonly Section[]): ReadonlyMap<string, string> {
  let index = sectionOfMessage.get(sections);
  if (!index) {
    const out = new Map<string, string>();
    for (const s of sections) for (const id of s.messageIds) out.set(id, s.id);
    sectionOfMessage.set(sections, index = out);
  }
  return index;
}

/**
 * The section in view that holds every message of `key` (a section as a basis names it), or
 * undefined. Not only one of exactly those messages: a section grows while it is pending (a
 * tool call whose result comes later), and a basis may name it as it was then.
 */
function liveSection(index: ReadonlyMap<string, string>, key: readonly string[]): string | undefined {
  const id = key[0] === undefined ? undefined : index.get(key[0]);
  return id !== undefined && key.every((m) => index.get(m) === id) ? id : undefined;
}

/** The basis a summary message carries, when it is well formed (it comes back from the plan log). */
function basisOf(m: Message | undefined): PointerBasis | undefined {
  const b = m?.isSummary === true ? m.pointer : undefined;
  const keys = (v: unknown): boolean => Array.isArray(v) && v.every((k) => Array.isArray(k) && k.length > 0 && k.every((id) => typeof id === 'string'));
  return b && typeof b.reason === 'string' && keys(b.reliesOn) && keys(b.replaced) ? b : undefined;
}

/**
 * The pointer summaries among `sections` (applied edits') whose claims hold, with what they
 * rest on: each section their basis names, in view verbatim, or replaced by a pointer summary
 * that carries the claim on to sections that are (followed on). A claim that no longer holds
 * (its section left with a truncate, or an edit made before bases were recorded replaced it)
 * is left out: nothing in view is kept for it.
 */
export function appliedPointers(sections: readonly Section[], messagesOf: (id: string) => readonly Message[]): AppliedPointer[] {
  const bases = new Map<string, PointerBasis>();
  const carrier = new Map<string, string>();
  for (const s of sections) {
    if (!s.compacted) continue;
    const basis = basisOf(messagesOf(s.id)[0]);
    if (!basis) continue;
    bases.set(s.id, basis);
    for (const k of basis.replaced) carrier.set(sectionKey(k), s.id);
  }
  const out: AppliedPointer[] = [];
  if (bases.size === 0) return out;
  const inView = messageIndex(sections);
  for (const [id, basis] of bases) {
    if (basis.reliesOn.length === 0) continue;
    const ends = new Set<string>();
    const through = new Set<string>();
    const open = new Set<string>([id]);
    const holds = (key: readonly string[]): boolean => {
      const live = liveSection(inView, key);
      if (live !== undefined) {
        ends.add(live);
        return true;
      }
      const via = carrier.get(sectionKey(key));
      const vb = via === undefined ? undefined : bases.get(via);
      if (via === undefined || !vb || open.has(via) || !carriesOn(basis.reason, vb)) return false;
      if (through.has(via)) return true;
      open.add(via);
      through.add(via);
      const ok = vb.reliesOn.length > 0 && vb.reliesOn.every(holds);
      open.delete(via);
      return ok;
    };
    if (basis.reliesOn.every(holds)) out.push({ id, reason: basis.reason as EditReason, ends: [...ends], through: [...through] });
  }
  return out;
}

/**
 * A section of `applied` that `edits` (applied together) take out of view and that the
 * claim resting on it does not survive: a summary it passes through is replaced, or a
 * section in view it rests on is, other than by a pointer summary carrying the claim on.
 * Undefined when every applied claim still holds (or leaves with its own summary).
 */
export function breaksApplied(applied: readonly AppliedPointer[], edits: readonly { readonly replaces: readonly string[]; readonly pointer?: PointerBasis }[]): string | undefined {
  const by = new Map<string, { readonly pointer?: PointerBasis }>();
  for (const e of edits) for (const id of e.replaces) by.set(id, e);
  for (const p of applied) {
    if (by.has(p.id)) continue;
    const lost = p.through.find((id) => by.has(id)) ?? p.ends.find((id) => {
      const e = by.get(id);
      return e !== undefined && !(e.pointer && carriesOn(p.reason, e.pointer));
    });
    if (lost !== undefined) return lost;
  }
  return undefined;
}

/**
 * The sections of `sections` named by `keys` (a basis' `reliesOn`), or undefined when one is
 * not in view (`sections` is the model's).
 */
export function sectionsByKey(sections: readonly Section[], keys: readonly (readonly string[])[]): string[] | undefined {
  const inView = messageIndex(sections);
  const out: string[] = [];
  for (const k of keys) {
    const id = liveSection(inView, k);
    if (id === undefined) return undefined;
    out.push(id);
  }
  return out;
}
