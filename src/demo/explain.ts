/**
 * The words the demo prints around the live run: a legend for its symbols, one summary the
 * planner wrote, and the first lines of the originals recalled by that summary's handle.
 * Pure text (no I/O), so what the demo teaches is tested apart from the run.
 */

/** What each symbol of the demo's live lines means. */
export function demoLegend(barWidth: number): string[] {
  return [
    'legend:',
    `  [${'#'.repeat(Math.round(barWidth / 3))}${'.'.repeat(barWidth - Math.round(barWidth / 3))}]  share of the context window in use (# used, . free)`,
    '  headroom N%       share of the window still free; plans start when it falls below the soft watermark',
    '  ⇢ plan p_…        a compaction plan the daemon pushed over the socket; the demo applies it and acks it',
    '  [low-score, …]    why the edits were chosen (see docs/compaction.md)',
    '  −N tokens         tokens the plan takes out of the context (originals replaced by a short summary)',
    '  h_…               recall handle: the originals are archived under it, quoted in the summary',
  ];
}

/** The summary text of one edit, indented, with its handle named first. */
export function summaryBlock(handle: string, reason: string, text: string, maxLines = 12): string[] {
  const lines = text.split('\n');
  const shown = lines.slice(0, maxLines).map((l) => `    ${l}`);
  if (lines.length > maxLines) shown.push(`    … (${lines.length - maxLines} more line(s))`);
  return [`one summary the planner wrote (reason ${reason}, handle ${handle}), as the agent now sees it:`, ...shown];
}

/**
 * The first `maxLines` lines of recalled originals as `contextd recall` prints them (the
 * store's `archivedText`: one `--- role (tool)` header per message), indented, the rest counted.
 */
export function recallExcerpt(text: string, maxLines = 8): string[] {
  const lines = text ? text.split('\n') : [];
  const out = lines.slice(0, maxLines).map((l) => `    ${l}`);
  if (lines.length > maxLines) out.push(`    … (${lines.length - maxLines} more line(s))`);
  return out;
}
