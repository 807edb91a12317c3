/** The kind of task a description asks for, by keyword evidence. Pure. */

export const TASK_TYPES = ['code', 'file', 'research', 'mixed'] as const;
export type TaskType = (typeof TASK_TYPES)[number];

const TASK_WORDS: Readonly<Record<Exclude<TaskType, 'mixed'>, RegExp>> = {
  code: /\b(fix|bug|implement|refactor|function|class|method|compile|build|test|tests|typescript|python|rust|javascript|api|endpoint|parser|crash|stack ?trace|error|exception|lint|type ?check|debug|feature|code|module|import|deploy|merge|commit|branch|pr)\b/gi,
  file: /\b(file|files|folder|directory|dir|rename|move|copy|delete|organi[sz]e|csv|json|yaml|pdf|docx?|spreadsheet|markdown|readme|config|convert|extract|backup|download|upload|log ?files?)\b/gi,
  research: /\b(research|find out|investigate|explain|why|what|how does|compare|summari[sz]e|look up|search|docs?|documentation|paper|article|learn|understand|best practice|options|recommend|browse|web|news)\b/gi,
};

/**
 * Classify a task description by keyword evidence: the type whose words dominate, or
 * 'mixed' when two types are close or nothing matches. Deterministic and cheap.
 */
export function classifyTaskText(text: string): TaskType {
  const scores = (Object.keys(TASK_WORDS) as Exclude<TaskType, 'mixed'>[]).map((t) => ({ t, n: text.match(TASK_WORDS[t])?.length ?? 0 }));
  scores.sort((a, b) => b.n - a.n);
  const [first, second] = scores;
  if (!first || first.n === 0) return 'mixed';
  if (second && second.n > 0 && second.n * 1.5 > first.n) return 'mixed';
  return first.t;
}
