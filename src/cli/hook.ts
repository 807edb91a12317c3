/**
 * `contextd hook claude-code|codex [--socket P] [--state DIR] [--budget N] [--timeout-ms MS]`:
 * read one hook event (JSON) on stdin, print the agent's hook answer on stdout.
 *
 * A hook runs on the agent's critical path, so this command never breaks the agent: on any
 * error it prints nothing, exits 0 and appends why to `<state>/hooks.log`. Socket calls are
 * bounded by `--timeout-ms` (default 150), so it answers promptly whether the daemon is up or
 * down, and a watchdog ends it after 5 s whatever happens. `bin/contextd.js` routes `hook`
 * here directly (not through the full command table) to keep start-up short; heavy modules
 * (SQLite, tiktoken) load only on the paths that need them: with the daemon down, a first
 * prompt is bootstrapped from the warm snapshot (one JSON file) and SQLite is opened only
 * when there is no usable snapshot.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, readSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { ClientTransport } from '../ipc/client-transport.js';
import { findSocketPath } from '../ipc/paths.js';
import { parseHookEvent, MAX_HOOK_INPUT_BYTES } from '../integrations/hook-event.js';
import { PENDING_DIR } from '../integrations/hook-settings.js';
import { AGENTS, answerHook, type AgentName } from '../integrations/answer.js';
import type { BootstrapAnswer, HookDeps } from '../integrations/hooks.js';
import type { LooseOriginals } from '../compact/archive-entries.js';
import { resolveStateDir, stateDbPath } from '../store/paths.js';
import type { SnapshotTemplateSource } from '../warm/snapshot-source.js';
import { WARM_SNAPSHOT_FILE } from '../warm/snapshot-format.js';
import { ErrorCode, isContextdError } from '../util/errors.js';

export interface HookFlags {
  readonly socket?: string;
  readonly state?: string;
  readonly budget?: number;
  readonly timeoutMs?: number;
}

export const DEFAULT_HOOK_TIMEOUT_MS = 150;
const WATCHDOG_MS = 5_000;
/**
 * Counts UTF-8 bytes, an upper bound on tokens under any byte-level BPE: the daemon-down
 * bootstrap fits its budget without building a tiktoken encoder, which alone takes longer
 * than a hook may (several hundred ms). The bootstrap comes out smaller than the daemon's.
 */
const BYTE_BOUND_COUNTER = { encoding: 'utf8-bytes', count: (text: string): number => Buffer.byteLength(text, 'utf8') };
/** The transport's debug sink: pino stays out of the hook's start-up (notes go to hooks.log). */
const NO_DEBUG = { debug: (): void => undefined };

/** Parse `hook AGENT [flags]` argv (after `hook`); undefined when it is not usable. */
export function parseHookArgs(argv: readonly string[]): { agent: AgentName; flags: HookFlags } | undefined {
  const agent = argv[0];
  if (!agent || !(AGENTS as readonly string[]).includes(agent)) return undefined;
  const flags: { socket?: string; state?: string; budget?: number; timeoutMs?: number } = {};
  for (let i = 1; i < argv.length; i += 2) {
    const value = argv[i + 1];
    if (value === undefined) return undefined;
    const n = Number(value);
    if (argv[i] === '--socket') flags.socket = value;
    else if (argv[i] === '--state') flags.state = value;
    else if (argv[i] === '--budget' && Number.isInteger(n) && n > 0) flags.budget = n;
    else if (argv[i] === '--timeout-ms' && Number.isInteger(n) && n > 0) flags.timeoutMs = n;
    else return undefined;
  }
  return { agent: agent as AgentName, flags };
}

/**
 * The hook input: read synchronously from fd 0 (a file or a blocking pipe, as agents spawn
 * hooks), which spares building `process.stdin`'s stream; a non-blocking stdin (EAGAIN) is read
 * as a stream instead.
 */
async function readStdin(max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  const buf = Buffer.allocUnsafe(64 * 1024);
  try {
    for (;;) {
      const n = readSync(0, buf, 0, buf.length, null);
      if (n === 0) return Buffer.concat(chunks).toString('utf8');
      size += n;
      if (size > max) throw new Error(`hook input over ${max} bytes`);
      chunks.push(Buffer.from(buf.subarray(0, n)));
      // A blocking read cannot be cut short by the watchdog: stop at the end of the event's
      // JSON document rather than wait for an EOF a writer that keeps stdin open never sends.
      const text = completeJson(chunks);
      if (text !== undefined) return text;
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
  }
  return readStdinStream(max, chunks, size);
}

/** The input as text when it already holds one whole JSON object, else undefined. */
function completeJson(chunks: readonly Buffer[]): string | undefined {
  const last = chunks[chunks.length - 1];
  if (!last || !/}\s*$/.test(last.subarray(Math.max(0, last.length - 16)).toString('latin1'))) return undefined;
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    JSON.parse(text);
    return text;
  } catch {
    return undefined;
  }
}

function readStdinStream(max: number, chunks: Buffer[], read: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = read;
    process.stdin.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) reject(new Error(`hook input over ${max} bytes`));
      else chunks.push(c);
    });
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

/**
 * Write the answer to fd 1 synchronously: `process.stdout` on a pipe (as agents spawn hooks) is
 * a net.Socket, and building it loads node:net and the stream modules (~6 ms) for one write.
 * Once written nothing is left to flush, so the process can end at once. A non-blocking stdout
 * that is full (EAGAIN) gets the rest through the stream.
 */
function writeStdout(text: string): Promise<void> {
  const buf = Buffer.from(text, 'utf8');
  let off = 0;
  try {
    while (off < buf.length) off += writeSync(1, buf, off);
    return Promise.resolve();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return Promise.reject(err as Error);
  }
  return new Promise((resolve, reject) => process.stdout.write(buf.subarray(off), (err) => (err ? reject(err) : resolve())));
}

/** One JSON-RPC call on a fresh connection, bounded by `timeoutMs` from connect to reply. */
async function callOnce(socketPath: string, timeoutMs: number, method: string, params: Record<string, unknown>): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`contextd did not answer ${method} within ${timeoutMs} ms`)), timeoutMs);
  });
  let transport: ClientTransport | undefined;
  try {
    // No socket file: the daemon is down, said without loading node:net.
    if (!existsSync(socketPath)) throw new Error(`cannot reach contextd at ${socketPath} (no socket): is the daemon running? start it with "contextd daemon"`);
    const { connectSocket, ClientTransport } = await import('../ipc/client-transport.js');
    const connecting = connectSocket(socketPath);
    let socket;
    try {
      socket = await Promise.race([connecting, deadline]);
    } catch (err) {
      // A connection made after the deadline would keep the hook alive until the daemon drops
      // it (its idle timeout): close it as soon as it is made.
      void connecting.then((late) => late.destroy(), () => undefined);
      throw err;
    }
    transport = new ClientTransport(socket, { maxLineBytes: 8 * 1024 * 1024, requestTimeoutMs: timeoutMs, socketPath }, { onNotification: () => undefined, onError: () => undefined, onClose: () => undefined }, NO_DEBUG);
    return await Promise.race([transport.call(method, params), deadline]);
  } finally {
    clearTimeout(timer);
    await transport?.destroy();
  }
}

/** A file name for a session id (ids come from the agent: keep only safe characters). */
function stashName(sessionId: string): string {
  return `${sessionId.replace(/[^\w.-]/g, '_').slice(0, 200)}.txt`;
}

function hookDeps(flags: HookFlags, stateDir: string, notes: Record<string, unknown>[], archive: (entry: LooseOriginals) => void): HookDeps {
  const socketPath = flags.socket ?? findSocketPath();
  const timeoutMs = flags.timeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS;
  return {
    bootstrapBudget: flags.budget ?? 2000,
    rpc: (method, params) => callOnce(socketPath, timeoutMs, method, params),
    note: (msg, fields) => notes.push({ msg, ...fields }),
    async localBootstrap(task, repo, budgetTokens): Promise<BootstrapAnswer | undefined> {
      const source = await snapshotSource(stateDir, notes);
      if (source) {
        const { bootstrap } = await import('../warm/bootstrap.js');
        try {
          const answer = bootstrap({ task, repo, budgetTokens }, { store: source, tokenCounter: BYTE_BOUND_COUNTER });
          notes.push({ msg: 'warm bootstrap read from the warm snapshot', writtenAt: new Date(source.writtenAt).toISOString() });
          return { ...answer, tokensAtMost: true };
        } catch (err) {
          // A template's detail line is parsed only when picked: a corrupt one shows up here.
          if (!isContextdError(err, ErrorCode.WARM_SNAPSHOT_INVALID)) throw err;
          notes.push(unusableSnapshot(err));
        }
      }
      const dbPath = stateDbPath(stateDir);
      if (!existsSync(dbPath)) return undefined;
      const [{ openDb }, { TemplateStore }, { bootstrap }] = await Promise.all([import('../store/db.js'), import('../store/templates.js'), import('../warm/bootstrap.js')]);
      const db = openDb(dbPath, { readonly: true });
      try {
        const answer = bootstrap({ task, repo, budgetTokens }, { store: new TemplateStore(db), tokenCounter: BYTE_BOUND_COUNTER });
        notes.push({ msg: 'warm bootstrap read from the template store' });
        return { ...answer, tokensAtMost: true };
      } finally {
        db.close();
      }
    },
    archive,
    async stash(sessionId, text) {
      // The lost facts quote the conversation, secrets included: on disk they are redacted as
      // the archived originals are (both layers; this path loads them for the archive anyway).
      const { redact } = await import('../harvest/redact.js');
      const safe = (await redact(text)).text;
      const dir = join(stateDir, PENDING_DIR);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileSync(join(dir, stashName(sessionId)), safe, { mode: 0o600 });
    },
    takeStash(sessionId) {
      const file = join(stateDir, PENDING_DIR, stashName(sessionId));
      if (!existsSync(file)) return undefined;
      const text = readFileSync(file, 'utf8');
      rmSync(file, { force: true });
      return text;
    },
  };
}

/**
 * The warm snapshot the daemon keeps beside the store, or undefined: none there, or one that
 * cannot be used (noted in hooks.log; the caller reads the store instead).
 */
async function snapshotSource(stateDir: string, notes: Record<string, unknown>[]): Promise<SnapshotTemplateSource | undefined> {
  if (!existsSync(join(stateDir, WARM_SNAPSHOT_FILE))) return undefined;
  const { readWarmSnapshot } = await import('../warm/snapshot-source.js');
  try {
    return readWarmSnapshot(stateDir);
  } catch (err) {
    notes.push(unusableSnapshot(err));
    return undefined;
  }
}

function unusableSnapshot(err: unknown): Record<string, unknown> {
  return { msg: 'warm snapshot unusable; reading the template store', err: (err as Error).message, code: (err as { code?: unknown }).code };
}

/** Archives an agent compaction's originals, secrets redacted (`archive.redactSecrets` at its default). */
async function archiveOriginals(stateDir: string, entry: LooseOriginals): Promise<void> {
  const [{ openDb }, { Archive }, { createTokenCounter }, { looseEntry, redactEntries }, { redactMessages }] = await Promise.all([
    import('../store/db.js'),
    import('../store/archive.js'),
    import('../model/tokens.js'),
    import('../compact/archive-entries.js'),
    import('../harvest/redact.js'),
  ]);
  const records = await redactEntries([looseEntry(entry, createTokenCounter(), Date.now())], redactMessages);
  const db = openDb(stateDbPath(stateDir));
  try {
    new Archive(db).putMany(records);
  } finally {
    db.close();
  }
}

function writeNotes(stateDir: string, agent: string, notes: readonly Record<string, unknown>[]): void {
  if (notes.length === 0) return;
  try {
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    const at = new Date().toISOString();
    appendFileSync(join(stateDir, 'hooks.log'), notes.map((n) => JSON.stringify({ time: at, agent, ...n })).join('\n') + '\n', { mode: 0o600 });
  } catch {
    // Nowhere left to report to; the agent must not be disturbed.
  }
}

/** Run one hook: resolves with the exit code (always 0). */
export async function runHook(agent: AgentName, flags: HookFlags): Promise<number> {
  const stateDir = resolveStateDir(flags.state);
  const notes: Record<string, unknown>[] = [];
  const watchdog = setTimeout(() => {
    notes.push({ msg: `hook gave up after ${WATCHDOG_MS} ms` });
    writeNotes(stateDir, agent, notes);
    process.exit(0);
  }, WATCHDOG_MS);
  watchdog.unref();
  try {
    const event = parseHookEvent(await readStdin(MAX_HOOK_INPUT_BYTES));
    const pendingArchives: Promise<void>[] = [];
    const deps = hookDeps(flags, stateDir, notes, (entry) => void pendingArchives.push(archiveOriginals(stateDir, entry)));
    const answer = await answerHook(event, deps);
    // The recall handle is only quoted once its originals are stored.
    await Promise.all(pendingArchives);
    if (answer) await writeStdout(`${JSON.stringify(answer)}\n`);
  } catch (err) {
    notes.push({ msg: 'hook failed; answered nothing', err: err instanceof Error ? err.message : String(err), code: (err as { code?: unknown }).code });
  } finally {
    clearTimeout(watchdog);
    writeNotes(stateDir, agent, notes);
  }
  return 0;
}

/** Entry used by bin/contextd.js for `contextd hook …` (argv after `hook`). */
export async function hookMain(argv: readonly string[]): Promise<number> {
  const parsed = parseHookArgs(argv);
  if (!parsed) {
    process.stderr.write(`usage: contextd hook ${AGENTS.join('|')} [--socket P] [--state DIR] [--budget N] [--timeout-ms MS]\n`);
    return 2;
  }
  return runHook(parsed.agent, parsed.flags);
}
