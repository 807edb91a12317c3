import type { Message, TranscriptEvent } from '../../src/model/messages.js';
import { SessionModel } from '../../src/model/index.js';
import { createExtractiveSummarizer, type Summarizer } from '../../src/compact/index.js';

/** Build messages tersely: ids are assigned in order. */
export class Script {
  private n = 0;
  private calls = 0;
  readonly events: TranscriptEvent[] = [];
  msg(m: Omit<Message, 'id'>): this {
    this.events.push({ type: 'message', message: { id: `m${this.n++}`, ...m } });
    return this;
  }
  system(text: string): this {
    return this.msg({ role: 'system', text });
  }
  user(text: string): this {
    return this.msg({ role: 'user', text });
  }
  assistant(text: string, reasoning?: string): this {
    return this.msg({ role: 'assistant', text, ...(reasoning ? { reasoning } : {}) });
  }
  tool(name: string, args: Record<string, unknown>, output: string, isError = false): this {
    const id = `c${this.calls++}`;
    this.msg({ role: 'assistant', text: '', toolCalls: [{ id, name, arguments: JSON.stringify(args) }] });
    return this.msg({ role: 'tool', text: output, toolCallId: id, toolName: name, ...(isError ? { isError: true } : {}) });
  }
  /** An assistant call with no result (yet). */
  pendingCall(name: string, args: Record<string, unknown>): this {
    return this.msg({ role: 'assistant', text: '', toolCalls: [{ id: `c${this.calls++}`, name, arguments: JSON.stringify(args) }] });
  }
  model(opts: { budgetTokens?: number; reserveRatio?: number } = {}): SessionModel {
    const m = new SessionModel({ sessionId: 'test-session', ...opts });
    m.applyAll(this.events);
    return m;
  }
}

/** Lines of plausible file content. */
export function fileBody(tag: string, lines = 60): string {
  return Array.from({ length: lines }, (_, i) => `export function ${tag}Step${i}(input: string): number { return ${i * 7} + input.length; }`).join('\n');
}

/** A long JS stack trace with one project frame. */
export function jsTrace(projectFile: string): string {
  return [
    'TypeError: Cannot read properties of undefined (reading \'release\')',
    '    at Object.get (node_modules/generic-pool/lib/Pool.js:120:11)',
    '    at Pool.acquire (node_modules/generic-pool/lib/Pool.js:301:17)',
    `    at acquireConnection (${projectFile}:42:13)`,
    '    at runTest (node_modules/@vitest/runner/dist/index.js:781:11)',
    '    at runSuite (node_modules/@vitest/runner/dist/index.js:909:15)',
    '    at runSuite (node_modules/@vitest/runner/dist/index.js:909:15)',
    '    at runFiles (node_modules/@vitest/runner/dist/index.js:958:5)',
    '    at startTests (node_modules/@vitest/runner/dist/index.js:967:3)',
    '    at processTicksAndRejections (node:internal/process/task_queues:95:5)',
    'Test run failed: 1 failed, 12 passed',
  ].join('\n');
}

/** The real extractive summarizer, its calls counted. */
export function countedSummarizer(): { summarizer: Summarizer; counted: () => number } {
  const extractive = createExtractiveSummarizer();
  let n = 0;
  const summarizer: Summarizer = {
    name: extractive.name,
    summarize: (input, signal) => {
      n++;
      return extractive.summarize(input, signal);
    },
  };
  return { summarizer, counted: () => n };
}
