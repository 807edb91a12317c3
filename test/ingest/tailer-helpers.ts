import type { Tailer, TailerEvents } from '../../src/ingest/index.js';
import type { Message, TranscriptEvent } from '../../src/model/messages.js';

type Name = keyof TailerEvents;
export interface Logged {
  readonly name: Name;
  readonly payload: unknown;
}

const NAMES: Name[] = ['session', 'events', 'reset', 'removed', 'line-error', 'error', 'ready'];

/** Records every tailer event and lets a test wait (with a timeout) for a condition on them. */
export class Recorder {
  readonly log: Logged[] = [];
  private waiters: { pred: () => boolean; resolve: () => void }[] = [];

  constructor(tailer: Tailer) {
    for (const name of NAMES) {
      (tailer as unknown as { on: (n: string, f: (p: unknown) => void) => void }).on(name, (payload: unknown) => {
        this.log.push({ name, payload });
        this.check();
      });
    }
  }

  of<N extends Name>(name: N, file?: string): TailerEvents[N][0][] {
    return this.log.filter((l) => l.name === name && (file === undefined || (l.payload as { file?: string }).file === file)).map((l) => l.payload as TailerEvents[N][0]);
  }

  /** Resolve once `pred` holds (checked now and after every event); reject after `ms`. */
  until(pred: () => boolean, what: string, ms = 10_000): Promise<void> {
    if (pred()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        pred,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`timed out waiting for ${what}; saw ${this.log.map((l) => l.name).join(',')}`));
      }, ms);
      this.waiters.push(waiter);
    });
  }

  /**
   * Rebuild one file's live context from the log the way a consumer would: `reset` (tailer)
   * drops everything; adapter `reset`/`truncate` events apply in order.
   */
  model(file: string): Message[] {
    let msgs: Message[] = [];
    for (const l of this.log) {
      const p = l.payload as { file?: string; events?: TranscriptEvent[] };
      if (p?.file !== file) continue;
      if (l.name === 'reset') msgs = [];
      if (l.name !== 'events') continue;
      for (const e of p.events ?? []) msgs = apply(msgs, e);
    }
    return msgs;
  }

  private check(): void {
    for (const w of [...this.waiters]) {
      if (w.pred()) {
        this.waiters = this.waiters.filter((x) => x !== w);
        w.resolve();
      }
    }
  }
}

export function apply(msgs: Message[], e: TranscriptEvent): Message[] {
  if (e.type === 'message') return [...msgs, e.message];
  if (e.type === 'reset') return [];
  if (e.type === 'truncate') {
    if (e.keepThroughId === null) return [];
    const i = msgs.findIndex((m) => m.id === e.keepThroughId);
    return i === -1 ? msgs : msgs.slice(0, i + 1);
  }
  return msgs;
}

/** Pace writes (not a synchronization point: the test waits on events). */
export const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const chatLine = (role: string, content: string) => JSON.stringify({ role, content }) + '\n';

/** Poll a condition that no event announces (e.g. a read offset); reject after `ms`. */
export async function pollUntil(pred: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(10);
  }
}
