/**
 * Sessions opened with kept model steps that wait for their transcript's lines to reach the
 * last step's offset before they are rebuilt (SessionManager.keptSteps), and what waits for
 * them: a request for the model waits until the session stops waiting.
 */
export class StepWaits<K> {
  private readonly waits = new Map<K, { readonly until: Promise<void>; readonly resolve: () => void; readonly watch: NodeJS.Timeout | undefined }>();

  /** `key` waits; `watch` (an interval that looks for a stall) is cleared when it stops. */
  start(key: K, watch?: NodeJS.Timeout): void {
    let resolve = (): void => undefined;
    const until = new Promise<void>((r) => (resolve = r));
    this.waits.set(key, { until, resolve, watch });
  }

  /** Resolves once `key` stops waiting; undefined when it does not wait. */
  until(key: K): Promise<void> | undefined {
    return this.waits.get(key)?.until;
  }

  /** `key` stops waiting (if it did): what waits for it goes on. */
  stop(key: K): void {
    const wait = this.waits.get(key);
    if (!wait) return;
    if (wait.watch) clearInterval(wait.watch);
    wait.resolve();
    this.waits.delete(key);
  }

  /** Every key waiting. */
  keys(): K[] {
    return [...this.waits.keys()];
  }
}
