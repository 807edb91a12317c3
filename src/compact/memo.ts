/**
 * Memoized per-message and per-section derived data for the planner and detectors.
 *
 * Messages are immutable once ingested, and the model hands out the same `Message` objects
 * until they change (a tool call's section gets a new message list when its result arrives;
 * a split multi-call message gets a fresh view object). So everything derived from a message's
 * content — term sets, line sets, tool actions, key-fact pieces — is cached in a `WeakMap`
 * keyed by the message object: a re-plan after one appended line only computes the new
 * message's data. Per-section values (derived from a list of messages) are keyed by the last
 * message and verified against the whole list by identity, so a changed list recomputes.
 * Cached values are shared: callers must treat them as read-only.
 */
import type { Message } from '../model/messages.js';

interface Slot {
  readonly msgs: readonly Message[];
  readonly value: unknown;
}

const perMessage = new WeakMap<Message, Map<string, unknown>>();
const perList = new WeakMap<Message, Map<string, Slot>>();
let computed = 0;

/**
 * How many values `memoMessage` and `memoList` have computed so far in this process (misses):
 * a re-plan after one appended line computes a handful, whatever the session's size.
 */
export function memoComputations(): number {
  return computed;
}

/** `compute(m)` once per message object and `name`. */
export function memoMessage<T>(m: Message, name: string, compute: (m: Message) => T): T {
  let slots = perMessage.get(m);
  if (!slots) {
    slots = new Map();
    perMessage.set(m, slots);
  }
  if (slots.has(name)) return slots.get(name) as T;
  computed++;
  const v = compute(m);
  slots.set(name, v);
  return v;
}

function sameList(a: readonly Message[], b: readonly Message[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** `compute(msgs)` once per identical list of message objects and `name`. */
export function memoList<T>(msgs: readonly Message[], name: string, compute: (msgs: readonly Message[]) => T): T {
  const last = msgs[msgs.length - 1];
  if (!last) {
    computed++;
    return compute(msgs);
  }
  let slots = perList.get(last);
  if (!slots) {
    slots = new Map();
    perList.set(last, slots);
  }
  const hit = slots.get(name);
  if (hit && (hit.msgs === msgs || sameList(hit.msgs, msgs))) return hit.value as T;
  computed++;
  const value = compute(msgs);
  // a frozen list (the model's own, stable until the section changes) is kept as it is
  slots.set(name, { msgs: Object.isFrozen(msgs) ? msgs : [...msgs], value });
  return value;
}

/** A small bounded string-keyed memo (oldest entry evicted first). */
export class BoundedMemo<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly maxEntries: number) {}
  get(key: string, compute: () => V): V {
    const hit = this.map.get(key);
    if (hit !== undefined) return hit;
    const v = compute();
    if (this.map.size >= this.maxEntries) {
      const first = this.map.keys().next();
      if (!first.done) this.map.delete(first.value);
    }
    this.map.set(key, v);
    return v;
  }
}
