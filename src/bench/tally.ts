/**
 * The tally behind the retention-style tables (retention probes, LoCoMo QA): per strategy ×
 * budget, how many probes of each category survived compaction, and the token totals of the
 * runs; then one table row per cell with the kept share overall and by category.
 */

/** Probes kept / counted by category for one strategy × budget, and its runs' token totals. */
export interface Cell {
  readonly kept: Record<string, number>;
  readonly total: Record<string, number>;
  tokensBefore: number;
  tokensAfter: number;
  overBudget: number;
  runs: number;
}

export function emptyCell(): Cell {
  return { kept: {}, total: {}, tokensBefore: 0, tokensAfter: 0, overBudget: 0, runs: 0 };
}

/** The key of a strategy at a budget share, as the tables and per-session rows name it. */
export function cellKey(strategy: string, share: number): string {
  return `${strategy}@${share}`;
}

/** a / b to three decimals; null when b is 0 (nothing to measure). */
export function ratio(a: number, b: number): number | null {
  return b ? Math.round((a / b) * 1000) / 1000 : null;
}

/** Count one probe of `category`, kept or lost. */
export function countProbe(cell: Cell, category: string | number, kept: boolean): void {
  cell.total[category] = (cell.total[category] ?? 0) + 1;
  if (kept) cell.kept[category] = (cell.kept[category] ?? 0) + 1;
}

/** Add one compaction run's token figures. */
export function countRun(cell: Cell, run: { readonly tokensBefore: number; readonly tokensAfter: number; readonly budget: number }): void {
  cell.tokensBefore += run.tokensBefore;
  cell.tokensAfter += run.tokensAfter;
  cell.overBudget += run.tokensAfter > run.budget ? 1 : 0;
  cell.runs++;
}

/** One table row's measured part: the share kept over all categories and per named category. */
export interface CellRow<C extends Cell> {
  readonly strategy: string;
  readonly budget: number;
  readonly kept: number | null;
  readonly byCategory: Record<string, number | null>;
  readonly cell: C;
}

/**
 * Rows budget by budget, strategy by strategy. `missing` gives the cell of a pair that never
 * ran (undefined: leave the row out). `name` labels a category in `byCategory`.
 */
export function cellRows<C extends Cell>(
  cells: ReadonlyMap<string, C>,
  budgets: readonly number[],
  strategies: readonly string[],
  categories: readonly (string | number)[],
  opts: { readonly missing?: () => C; readonly name?: (category: string | number) => string } = {},
): CellRow<C>[] {
  const rows: CellRow<C>[] = [];
  for (const budget of budgets) {
    for (const strategy of strategies) {
      const cell = cells.get(cellKey(strategy, budget)) ?? opts.missing?.();
      if (!cell) continue;
      const byCategory: Record<string, number | null> = {};
      for (const c of categories) byCategory[opts.name?.(c) ?? String(c)] = ratio(cell.kept[c] ?? 0, cell.total[c] ?? 0);
      const sum = (r: Record<string, number>): number => Object.values(r).reduce((a, b) => a + b, 0);
      rows.push({ strategy, budget, kept: ratio(sum(cell.kept), sum(cell.total)), byCategory, cell });
    }
  }
  return rows;
}
