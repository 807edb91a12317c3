import { decodeAnalysis, DERIVATION_VERSION, encodeAnalysis, type DerivedDataCache, type TextAnalysis, type TextOwner } from '../model/index.js';
import type { DerivedData, DerivedDataRow } from '../store/index.js';
import { textLanes } from '../text/index.js';
import { describeError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { WriteBehind } from './write-behind.js';

/**
 * The daemon's derived-data cache: a 53-bit key of a fragment's text (text/hash `textLanes`) →
 * its term stats and fingerprint (model/derived.ts encoding, DERIVATION_VERSION), in SQLite
 * (store/derived-data). The key is not cryptographic: each row records the length and an
 * independent 32-bit hash of its text, and a row of another text (a collision) is recomputed,
 * never returned. (SHA-1 per text cost more than analysing the many short texts again.) A cold plan
 * after a restart reads them instead of analysing every message again. New entries are written
 * in batches off the append path (WriteBehind). A row that does not decode (corrupted,
 * truncated) is recomputed, never trusted; a store failure is logged and the data recomputed.
 */
export class SqliteDerivedDataCache implements DerivedDataCache {
  private readonly pending: WriteBehind<DerivedDataRow & { readonly analysis: TextAnalysis; readonly owner: TextOwner }, number>;
  private readonly log: Logger;

  constructor(
    private readonly store: DerivedData,
    logger: Logger,
  ) {
    this.log = logger.child({ component: 'derived-cache' });
    this.pending = new WriteBehind((rows) => store.putMany(DERIVATION_VERSION, rows), this.log, 'derived data not cached; it will be computed again after a restart');
  }

  getMany(texts: readonly string[]): (TextAnalysis | undefined)[] {
    const owners: TextOwner[] = [];
    const keys = texts.map((t) => {
      const { key, owner } = keyOf(t);
      owners.push(owner);
      return key;
    });
    const out: (TextAnalysis | undefined)[] = this.pending.size === 0 ? new Array<undefined>(texts.length).fill(undefined) : keys.map((k, i) => {
            const p = this.pending.get(k);
            return p && sameOwner(p.owner, owners[i] as TextOwner) ? p.analysis : undefined;
          });
    const missing = keys.filter((_, i) => out[i] === undefined);
    if (missing.length === 0) return out;
    let stored: Map<number, Buffer>;
    try {
      stored = this.store.getMany(DERIVATION_VERSION, missing);
    } catch (err) {
      this.log.warn({ err: describeError(err) }, 'derived data cache unreadable; computing instead');
      return out;
    }
    let bad = 0;
    const result = out.map((a, i) => {
      if (a) return a;
      const bytes = stored.get(keys[i] as number);
      if (!bytes) return undefined;
      const decoded = decodeAnalysis(bytes, owners[i] as TextOwner);
      if (!decoded) bad++;
      return decoded;
    });
    if (bad > 0) this.log.warn({ rows: bad }, 'derived data rows unreadable; recomputed');
    return result;
  }

  setMany(entries: readonly { readonly text: string; readonly analysis: TextAnalysis }[]): void {
    for (const { text, analysis } of entries) {
      const { key, owner } = keyOf(text);
      this.pending.add(key, { key, data: encodeAnalysis(analysis, owner), analysis, owner });
    }
  }

  /** Write what is pending now (also called on close). */
  flush(): void {
    this.pending.flush();
  }

  /** Flush and stop caching (before the database closes). */
  close(): void {
    this.pending.close();
  }
}

const lanes = new Uint32Array(3);

/** The 53-bit store key of a text (lane 0 and the top 21 bits of lane 1: an exact double) and what its row must record of it. */
function keyOf(text: string): { key: number; owner: TextOwner } {
  textLanes(text, lanes);
  return { key: (lanes[0] as number) * 0x200000 + ((lanes[1] as number) >>> 11), owner: { chars: text.length, check: lanes[2] as number } };
}

function sameOwner(a: TextOwner, b: TextOwner): boolean {
  return a.chars === b.chars && a.check === b.check;
}
