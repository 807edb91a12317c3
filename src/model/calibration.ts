/**
 * Calibration of our token count against what the agent reports.
 *
 * Our count covers only what the transcript shows, tokenized with tiktoken. The agent's own
 * figure also holds its system prompt and tool definitions (a roughly constant offset) and
 * uses its own tokenizer (a roughly constant ratio: Claude's counts run ~1.2–1.5× o200k on
 * code). Each `usage` event gives a pair (our count then, reported); a least-squares line
 * `reported ≈ offset + ratio × counted` estimates both: the ratio is the least-squares slope
 * over the last CALIBRATION_SAMPLES pairs (clamped to [MIN_RATIO, MAX_RATIO]), and the line
 * passes through the latest pair. With one pair (or pairs too close together to separate the
 * two) the ratio is 1 and the whole gap is offset. The offset may be negative when the agent
 * counts fewer tokens than we do.
 */
export const CALIBRATION_SAMPLES = 32;
/** Pairs must span at least this many counted tokens before a ratio is fitted. */
export const MIN_SPREAD_TOKENS = 2_000;
export const MIN_RATIO = 0.5;
export const MAX_RATIO = 3;

export interface Calibration {
  /** Last agent-reported context size, if any. */
  readonly reportedTokens?: number;
  /** Our count when that report arrived. */
  readonly countedTokens?: number;
  /** Usage reports the fit is based on. */
  readonly samples: number;
  /** Fitted constant part (tokens the transcript does not show). */
  readonly offsetTokens: number;
  /** Fitted tokenizer ratio. */
  readonly ratio: number;
  /** `offsetTokens + ratio × tokens()` rounded: the calibrated size of the live context now. */
  readonly estimatedTokens: number;
}

export class Calibrator {
  private pairs: { counted: number; reported: number }[] = [];

  add(counted: number, reported: number): void {
    this.pairs.push({ counted, reported });
    if (this.pairs.length > CALIBRATION_SAMPLES) this.pairs.shift();
  }

  clear(): void {
    this.pairs = [];
  }

  get last(): { counted: number; reported: number } | undefined {
    return this.pairs.at(-1);
  }

  /**
   * Fitted `{offset, ratio}`; identity when nothing was reported. The ratio is the
   * least-squares slope; the line is then anchored at the latest report (the freshest truth),
   * so `offset = lastReported − ratio × lastCounted`.
   */
  fit(): { offset: number; ratio: number } {
    const n = this.pairs.length;
    const last = this.pairs[n - 1];
    if (!last) return { offset: 0, ratio: 1 };
    let sx = 0;
    let sy = 0;
    let min = Infinity;
    let max = -Infinity;
    for (const p of this.pairs) {
      sx += p.counted;
      sy += p.reported;
      min = Math.min(min, p.counted);
      max = Math.max(max, p.counted);
    }
    let ratio = 1;
    if (n >= 2 && max - min >= MIN_SPREAD_TOKENS) {
      const mx = sx / n;
      const my = sy / n;
      let sxy = 0;
      let sxx = 0;
      for (const p of this.pairs) {
        sxy += (p.counted - mx) * (p.reported - my);
        sxx += (p.counted - mx) ** 2;
      }
      ratio = Math.min(MAX_RATIO, Math.max(MIN_RATIO, sxy / sxx));
    }
    return { offset: last.reported - ratio * last.counted, ratio };
  }

  calibration(tokensNow: number): Calibration {
    const last = this.last;
    const { offset, ratio } = this.fit();
    return {
      ...(last ? { reportedTokens: last.reported, countedTokens: last.counted } : {}),
      samples: this.pairs.length,
      offsetTokens: Math.round(offset),
      ratio,
      estimatedTokens: Math.max(0, Math.round(offset + ratio * tokensNow)),
    };
  }
}
