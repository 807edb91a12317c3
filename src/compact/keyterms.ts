/**
 * "Referenced later": terms of old messages that later user/assistant turns (or the goal)
 * mention again. Facts carrying them are what a summary must keep — this is how a fact that
 * lives only in an old tool output survives when a later turn refers to it by name.
 */
import type { Message } from '../ingest/types.js';
import { termsOf } from './text.js';

export class ReferenceIndex {
  /** term → last message index whose user/assistant text or tool arguments mention it. */
  private readonly lastRef = new Map<string, number>();
  /** term → number of messages containing it (any role). */
  private readonly df = new Map<string, number>();
  private readonly goalTerms: Set<string>;
  private readonly rareLimit: number;

  constructor(messages: readonly Message[], goal: string) {
    messages.forEach((m, i) => {
      const refText = m.role === 'tool' ? '' : `${m.text}\n${(m.toolCalls ?? []).map((c) => c.arguments).join('\n')}`;
      for (const t of termsOf(refText)) this.lastRef.set(t, i);
      const all = m.role === 'tool' ? termsOf(m.text.length > 20_000 ? m.text.slice(0, 20_000) : m.text) : termsOf(refText);
      for (const t of all) this.df.set(t, (this.df.get(t) ?? 0) + 1);
    });
    this.goalTerms = termsOf(goal);
    this.rareLimit = Math.max(4, Math.ceil(messages.length * 0.03));
  }

  /** True when `t` is specific enough to steer a summary (identifier-like or rare). */
  private specific(t: string): boolean {
    return /[_.\d]/.test(t) || (this.df.get(t) ?? 0) <= this.rareLimit;
  }

  /** Terms of `text` (the messages ending at index `end`) that the goal or a later turn mentions. */
  keyTermsFor(text: string, end: number): string[] {
    const out: string[] = [];
    for (const t of termsOf(text)) {
      const later = (this.lastRef.get(t) ?? -1) > end;
      if ((later || this.goalTerms.has(t)) && this.specific(t)) out.push(t);
    }
    return out.sort();
  }

  /** Specific goal terms (the active task words): identifier-like or rare in the session. */
  goalWords(): string[] {
    return [...this.goalTerms].filter((t) => this.specific(t)).sort();
  }
}
