/**
 * Sessions released with lines read but not applied, and the tokens their rebuild will hold.
 * Nothing else would bring those lines back (the tailer read past them), so each is rebuilt once
 * the memory budget has room for it (`fits`), without waiting for another append or request.
 */
export class RebuildList<K> {
  private readonly due = new Map<K, number>();

  /** `key` waits to be rebuilt, holding `tokens` once it is. */
  add(key: K, tokens: number): void {
    this.due.set(key, tokens);
  }

  /** The tokens `key`'s rebuild will hold, or undefined when it waits for none. */
  tokensOf(key: K): number | undefined {
    return this.due.get(key);
  }

  /** `key` no longer waits (rebuilt, or gone). */
  delete(key: K): void {
    this.due.delete(key);
  }

  /** Every session waiting, in the order they were released. */
  keys(): IterableIterator<K> {
    return this.due.keys();
  }

  clear(): void {
    this.due.clear();
  }
}

/**
 * Whether a rebuild holding `tokens` fits a budget of `maxSessionTokens` beside the `held` tokens
 * (models in memory and lines queued); always with no bound (0).
 */
export function rebuildFits(tokens: number, held: number, maxSessionTokens: number): boolean {
  return maxSessionTokens <= 0 || held + tokens <= maxSessionTokens;
}
