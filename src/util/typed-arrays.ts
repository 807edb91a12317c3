/** The typed arrays `doubled` grows. */
export type GrowableArray = Int32Array | Uint32Array | Float64Array;

/**
 * A typed array of twice `a`'s length (at least 1) holding `a`'s values first, the rest zero:
 * the grow step of a buffer filled a slot at a time.
 */
export function doubled<T extends GrowableArray>(a: T): T {
  const out = new (a.constructor as new (length: number) => T)(Math.max(1, a.length * 2));
  out.set(a);
  return out;
}
