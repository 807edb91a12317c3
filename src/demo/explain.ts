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

/** A recalled original, reduced to what fits a demo: role, tool and the first lines of its text. */
export interface RecalledMessage {
  readonly role: string;
  readonly text: string;
  readonly toolName?: string | undefined;
  readonly toolCalls?: readonly { readonly name: string; readonly arguments: string }[] | undefined;
}

/** The first `maxLines` lines of the recalled originals, one `--- role` header per message. */
export function recallExcerpt(messages: readonly RecalledMessage[], maxLines = 8): string[] {
  const out: string[] = [];
  let hidden = 0;
  for (const m of messages) {
    const lines = [`--- ${m.role}${m.toolName ? ` (${m.toolName})` : ''}`, ...(m.text ? m.text.split('\n') : []), ...(m.toolCalls ?? []).map((c) => `→ ${c.name} ${c.arguments}`)];
    for (const l of lines) {
      if (out.length < maxLines) out.push(`    ${l}`);
      else hidden++;
    }
  }
  if (hidden > 0) out.push(`    … (${hidden} more line(s))`);
  return out;
}
