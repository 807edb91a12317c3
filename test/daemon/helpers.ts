/** Helpers of the daemon tests that drive a daemon through its socket. */

/**
 * The first value `probe` resolves to that is not undefined, asked every 50 ms; throws after
 * 20 s naming `what`.
 */
export async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}
