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
 */
import type { Section } from '../model/types.js';
import type { Unit } from './types.js';

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
function passesThrough(from: Unit, via: Unit): boolean {
  if (from.reason === 'stale-read') return via.reason === 'stale-read' || via.reason === 'redundant-tool-output';
  if (from.reason === 'redundant-tool-output') return via.reason === 'redundant-tool-output' && !hasExcept(via);
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
 * section, so taking a section a chosen pointer relies on can be refused.
 */
export class PointerGuard {
  /** Units pointing at each section id. */
  private readonly pointers = new Map<string, Unit[]>();

  constructor(units: readonly Unit[]) {
    for (const u of units) {
      for (const id of pointedAt(u.detail)) {
        const list = this.pointers.get(id);
        if (list) list.push(u);
        else this.pointers.set(id, [u]);
      }
    }
  }

  /** Whether some chosen pointer relies on `u`'s section staying in view. */
  pinned(u: Unit, chosen: ReadonlyMap<string, Unit>): boolean {
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
