/**
 * "Referenced later": terms of old messages that later user/assistant turns (or the goal)
 * mention again. Facts carrying them are what a summary must keep — this is how a fact that
 * lives only in an old tool output survives when a later turn refers to it by name.
 */
import type { Message } from '../model/messages.js';
import { derivedDigestOf, TERM_KEY_CHARS } from '../model/index.js';
import { memoMessage } from './memo.js';
import { textOf } from './detectors/util.js';
import { contentTermKey, contentTermKeys, contentTerms, isIdentifierLikeKey } from '../text/index.js';
import { doubled } from '../util/typed-arrays.js';

const NO_KEYS = new Float64Array(0);
/** Tool results read for document frequency up to this many chars (the texts the derived data gives keys for). */
const DF_CHARS = TERM_KEY_CHARS;

/** `contentTerms(textOf([m]))`, once per message: the terms of all the message says. */
export function messageTerms(m: Message): ReadonlySet<string> {
  return memoMessage(m, 'text-terms', (x) => contentTerms(textOf([x])));
}

/** Only text: the key sets below are then the keys of its text (one array per message, not two). */
function textOnly(m: Message): boolean {
  return !m.reasoning && !m.toolCalls?.length;
}

/**
 * The references below are kept by term key (`contentTermKey`), not by term string: a cold
 * plan reads every message of the session into them, and an array of numbers per
 * message costs a fraction of a Set of strings to make and to keep. Term strings are made only
 * for the messages a summary is written from (`messageTerms`).
 */
function textKeysOf(m: Message): Float64Array {
  return derivedDigestOf(m)?.termKeys ?? memoMessage(m, 'text-term-keys', (x) => contentTermKeys(x.text));
}

/** Term keys of what a message's user/assistant text or tool arguments mention (none for tool results). */
function refKeysOf(m: Message): Float64Array {
  if (m.role === 'tool') return NO_KEYS;
  if (textOnly(m)) return textKeysOf(m);
  return memoMessage(m, 'ref-term-keys', (x) => contentTermKeys(`${x.text}\n${(x.toolCalls ?? []).map((c) => c.arguments).join('\n')}`));
}

/** Term keys of what a message contains, for document frequency (tool results: their first 20k chars). */
function dfKeysOf(m: Message): Float64Array {
  if (m.role !== 'tool') return refKeysOf(m);
  if (textOnly(m) && m.text.length <= DF_CHARS) return textKeysOf(m);
  return memoMessage(m, 'df-term-keys', (x) => contentTermKeys(x.text.length > DF_CHARS ? x.text.slice(0, DF_CHARS) : x.text));
}

/** The keys of a term set kept as it is (a memoized one, e.g. a section's). */
const keysOfSet = new WeakMap<ReadonlySet<string>, ReadonlySet<number>>();
function setKeys(terms: ReadonlySet<string>): ReadonlySet<number> {
  let keys = keysOfSet.get(terms);
  if (!keys) {
    keys = new Set([...terms].map(contentTermKey));
    keysOfSet.set(terms, keys);
  }
  return keys;
}

/**
 * Per-term references over a message list: the last index whose user/assistant text or tool
 * arguments mention a term, and how many messages contain it. Grown in place when the list
 * only grew (a re-plan after an appended line reads the new messages only).
 */
let referenceReads = 0;

/** Messages read into term references so far in this process (each once per list it joins). */
export function referenceMessagesRead(): number {
  return referenceReads;
}

/** Terms in at most this many of `count` messages are rare. */
function rareLimitOf(count: number): number {
  return Math.max(4, Math.ceil(count * 0.03));
}

/** Specific enough to steer a summary: identifier-like, or rare (in at most `limit` messages); by term key. */
function isSpecific(key: number, df: number, limit: number): boolean {
  return isIdentifierLikeKey(key) || df <= limit;
}

/** An extend by at most this many messages logs the terms it changed. */
const LOGGED_MESSAGES = 32;
/** Epochs whose changed terms are kept. */
const LOGGED_EPOCHS = 16;

/** Key terms of a term set as worked out at `epoch`, with what else they depend on. */
interface KeyTermEntry {
  readonly epoch: number;
  readonly rareLimit: number;
  readonly goal: string;
  readonly value: readonly string[];
}

/**
 * Per-term references of a message list: each term has a slot (`slots`), and the slot's last
 * referencing message and document frequency live in two typed arrays (-1: never referenced)
 * — one map lookup per term occurrence instead of two, and no counts boxed in maps.
 */
class TermRefs {
  readonly slots: Map<number, number>;
  lastRef: Int32Array;
  df: Uint32Array;
  messages: readonly Message[] = [];
  /** Reference indexes (plans) reading these maps: they must not grow under them. */
  readers = 0;
  /** How many times `extend` read new messages. */
  epoch = 0;
  /**
   * The terms whose last reference or frequency changed at each recent epoch (an extend by a
   * few messages — a re-plan's); changes at `floor` and before are not known term by term.
   */
  private readonly changes: { readonly epoch: number; readonly keys: ReadonlySet<number> }[] = [];
  private floor = 0;
  /** Key terms already worked out, by term set and end (see `ReferenceIndex.keyTermsOf`). */
  readonly keyTermMemo = new WeakMap<ReadonlySet<string>, Map<number, KeyTermEntry>>();

  constructor(from?: TermRefs) {
    this.slots = new Map(from?.slots);
    this.lastRef = from ? from.lastRef.slice() : new Int32Array(1024);
    this.df = from ? from.df.slice() : new Uint32Array(1024);
    if (from) {
      this.messages = from.messages;
      this.epoch = from.epoch;
      this.floor = from.epoch;
    }
  }

  /** Whether no term of `terms` changed since `epoch` (false when that is not known). */
  unchangedSince(epoch: number, terms: ReadonlySet<string>): boolean {
    if (epoch < this.floor) return false;
    let keys: ReadonlySet<number> | undefined;
    for (const c of this.changes) {
      if (c.epoch <= epoch) continue;
      keys ??= setKeys(terms);
      for (const k of c.keys) if (keys.has(k)) return false;
    }
    return true;
  }

  /** The slot of term key `k`, made when new. */
  private slotOf(k: number): number {
    let slot = this.slots.get(k);
    if (slot === undefined) {
      slot = this.slots.size;
      this.slots.set(k, slot);
      if (slot === this.df.length) {
        this.lastRef = doubled(this.lastRef);
        this.df = doubled(this.df);
      }
      this.lastRef[slot] = -1;
    }
    return slot;
  }

  extend(messages: readonly Message[]): void {
    const added = messages.length - this.messages.length;
    referenceReads += Math.max(0, added);
    if (added <= 0) {
      this.messages = messages;
      return;
    }
    this.epoch++;
    const from = this.messages.length;
    // A few messages (a re-plan's): the terms whose key status may have changed are logged
    // (`logChanges`), so the key terms of term sets without them stay. Kept out of the loop
    // below, which a cold plan runs over the whole session.
    const dfBefore = added <= LOGGED_MESSAGES ? this.dfOfNew(messages, from) : undefined;
    this.read(messages, from);
    this.messages = messages;
    if (!dfBefore) {
      this.changes.length = 0;
      this.floor = this.epoch;
      return;
    }
    this.logChanges(messages, from, dfBefore);
  }

  /**
   * Reads `messages[from…]` into the references. A function of its own, ending with its loop:
   * V8 compiles the loop of a cold plan's long read on the stack (OSR) and enters that code
   * again from a re-plan's short one, which must not then run into code it has no feedback for
   * (a deoptimization on every re-plan).
   */
  private read(messages: readonly Message[], from: number): void {
    for (let i = from; i < messages.length; i++) {
      const m = messages[i] as Message;
      // the slot first: making one may replace the arrays
      const ref = refKeysOf(m);
      for (let j = 0; j < ref.length; j++) {
        const slot = this.slotOf(ref[j] as number);
        this.lastRef[slot] = i;
      }
      const df = dfKeysOf(m);
      for (let j = 0; j < df.length; j++) {
        const slot = this.slotOf(df[j] as number);
        this.df[slot] = (this.df[slot] as number) + 1;
      }
    }
  }

  /** The document frequency, before `messages[from…]` are read, of each term (key) they contain. */
  private dfOfNew(messages: readonly Message[], from: number): Map<number, number> {
    const before = new Map<number, number>();
    for (let i = from; i < messages.length; i++) for (const k of dfKeysOf(messages[i] as Message)) if (!before.has(k)) before.set(k, this.dfOf(k));
    return before;
  }

  /**
   * Logs the terms of `messages[from…]` (just read) whose key status may have changed: what
   * they refer to (later for every older end) if it is specific now, and what became or
   * stopped being specific.
   */
  private logChanges(messages: readonly Message[], from: number, dfBefore: ReadonlyMap<number, number>): void {
    const limit = rareLimitOf(messages.length);
    const logged = new Set<number>();
    for (let i = from; i < messages.length; i++) for (const k of refKeysOf(messages[i] as Message)) if (isSpecific(k, this.dfOf(k), limit)) logged.add(k);
    for (const [k, before] of dfBefore) if (isSpecific(k, before, limit) !== isSpecific(k, this.dfOf(k), limit)) logged.add(k);
    this.changes.push({ epoch: this.epoch, keys: logged });
    if (this.changes.length > LOGGED_EPOCHS) this.floor = (this.changes.shift() as { epoch: number }).epoch;
  }

  /** The last message index referencing the term of key `k` (-1: none). */
  lastRefOf(k: number): number {
    const slot = this.slots.get(k);
    return slot === undefined ? -1 : (this.lastRef[slot] as number);
  }

  /** How many messages contain the term of key `k`. */
  dfOf(k: number): number {
    const slot = this.slots.get(k);
    return slot === undefined ? 0 : (this.df[slot] as number);
  }
}

/** True when `prefix` is the start of `list`, message by message (same objects). */
function isPrefix(prefix: readonly Message[], list: readonly Message[]): boolean {
  if (prefix.length > list.length) return false;
  for (let i = 0; i < prefix.length; i++) if (prefix[i] !== list[i]) return false;
  return true;
}

/** The latest term references per owner (a session model), for `ReferenceIndex.of`. */
const refsByOwner = new WeakMap<object, TermRefs>();

export class ReferenceIndex {
  private readonly terms: TermRefs;
  private readonly goal: string;
  private readonly goalTerms: Set<string>;
  private readonly rareLimit: number;
  private refs: TermRefs | undefined;

  /** An index of its own over `messages` (every message read). */
  constructor(messages: readonly Message[], goal: string, refs?: TermRefs) {
    if (!refs) {
      refs = new TermRefs();
      refs.extend(messages);
    }
    this.terms = refs;
    this.goal = goal;
    this.goalTerms = contentTerms(goal);
    this.rareLimit = rareLimitOf(messages.length);
  }

  /**
   * The index of `owner`'s current `messages`, reusing what was read for its last plan when the
   * list only grew since (same message objects in front): only appended messages are read.
   * Call `release()` when the plan is done; until then a later call does not change this one
   * (it grows a copy instead).
   */
  static of(owner: object, messages: readonly Message[], goal: string): ReferenceIndex {
    let refs = refsByOwner.get(owner);
    if (!refs || !isPrefix(refs.messages, messages)) refs = new TermRefs();
    else if (refs.messages.length < messages.length && refs.readers > 0) refs = new TermRefs(refs);
    refs.extend(messages);
    refsByOwner.set(owner, refs);
    refs.readers++;
    const index = new ReferenceIndex(messages, goal, refs);
    index.refs = refs;
    return index;
  }

  /** Ends a plan's use of an index from `of` (the owner's references may grow again). */
  release(): void {
    if (this.refs) this.refs.readers--;
    this.refs = undefined;
  }

  /** True when the term of key `k` is specific enough to steer a summary (identifier-like or rare). */
  private specific(k: number): boolean {
    return isSpecific(k, this.terms.dfOf(k), this.rareLimit);
  }

  /** Terms of `text` (the messages ending at index `end`) that the goal or a later turn mentions. */
  keyTermsFor(text: string, end: number): string[] {
    return this.keyTermsOf(contentTerms(text), end);
  }

  /**
   * `keyTermsOf` of a term set that is kept as it is (a memoized one, e.g. a section's),
   * remembered with the references it was worked out from: a later plan whose new messages
   * changed none of its terms (and with the same goal and rarity limit) gets it again without
   * looking each term up. The array is shared: read-only.
   */
  keyTermsOfSet(terms: ReadonlySet<string>, end: number): readonly string[] {
    const refs = this.terms;
    let byEnd = refs.keyTermMemo.get(terms);
    if (!byEnd) {
      byEnd = new Map();
      refs.keyTermMemo.set(terms, byEnd);
    }
    const hit = byEnd.get(end);
    if (hit && hit.goal === this.goal && hit.rareLimit === this.rareLimit && refs.unchangedSince(hit.epoch, terms)) return hit.value;
    const value = Object.freeze(this.keyTermsOf(terms, end));
    byEnd.set(end, { epoch: refs.epoch, rareLimit: this.rareLimit, goal: this.goal, value });
    return value;
  }

  /** `keyTermsFor` over terms already extracted (`contentTerms` of the text). */
  keyTermsOf(terms: Iterable<string>, end: number): string[] {
    const out: string[] = [];
    for (const t of terms) {
      const k = contentTermKey(t);
      const later = this.terms.lastRefOf(k) > end;
      if ((later || this.goalTerms.has(t)) && this.specific(k)) out.push(t);
    }
    return out.sort();
  }

  /** Specific goal terms (the active task words): identifier-like or rare in the session. */
  goalWords(): string[] {
    return [...this.goalTerms].filter((t) => this.specific(contentTermKey(t))).sort();
  }
}
