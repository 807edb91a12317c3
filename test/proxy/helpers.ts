/** Start a real proxy (with a real SQLite archive and a log file) in a fresh temp dir. */
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createExtractiveSummarizer } from '../../src/compact/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { ProxyServer, resolveProxyOptions, type ProxyConfig } from '../../src/proxy/index.js';
import { Archive, openDb, type Db } from '../../src/store/index.js';
import { createLogger } from '../../src/util/logger.js';
import { afterEach } from 'vitest';
import { ScriptedUpstream } from './upstream.js';

export interface ProxyHarness {
  readonly proxy: ProxyServer;
  readonly url: string;
  readonly dir: string;
  readonly db: Db;
  readonly archive: Archive;
  /** Everything logged so far (NDJSON). */
  logs(): string;
  /** Every byte under the temp dir (state + logs), as latin1 text for grepping. */
  everything(): string;
  close(): Promise<void>;
}

const counter = createTokenCounter('o200k_base');

export async function startProxy(upstream: string, config: Partial<ProxyConfig> = {}, loop: { budgetTokens?: number; reserveRatio?: number; hysteresis?: number } = {}): Promise<ProxyHarness> {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-proxy-'));
  const logFile = join(dir, 'proxy.log');
  const logger = createLogger({ level: 'debug', destination: pino.destination({ dest: logFile, sync: true }) });
  const db = openDb(join(dir, 'contextd.db'));
  const archive = new Archive(db);
  const options = resolveProxyOptions(
    { listen: '127.0.0.1:0', upstreams: { anthropic: upstream, openai: upstream }, ...config },
    { idleTimeoutMs: 60_000, budgetTokens: loop.budgetTokens, reserveRatio: loop.reserveRatio ?? 0.15, hysteresis: loop.hysteresis ?? 0.1 },
  );
  if (!options) throw new Error('proxy options not resolved');
  const proxy = new ProxyServer(options, { logger, tokenCounter: counter, summarizer: createExtractiveSummarizer(), archive });
  await proxy.listen();
  const { port } = proxy.address();
  return {
    proxy,
    url: `http://127.0.0.1:${port}`,
    dir,
    db,
    archive,
    logs: () => readFileSync(logFile, 'utf8'),
    everything: () => {
      db.pragma('wal_checkpoint(TRUNCATE)');
      return filesText(dir);
    },
    close: async () => {
      await proxy.close(500);
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Read a fetch body chunk by chunk, calling `onChunk` with each as it arrives. */
export async function readChunks(res: Response, onChunk?: (text: string, i: number) => void): Promise<string> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  let all = '';
  for (let i = 0; ; i++) {
    const { done, value } = await reader.read();
    if (done) break;
    const t = dec.decode(value, { stream: true });
    all += t;
    onChunk?.(t, i);
  }
  return all;
}

/** A scripted upstream with a proxy in front of it, both closed after each test of the file. */
export interface ProxyRig {
  /** The upstream of the current test (set by `start`). */
  readonly upstream: ScriptedUpstream;
  /** Start a fresh upstream and a proxy forwarding to it. */
  start(config?: Partial<ProxyConfig>, loop?: Parameters<typeof startProxy>[2]): Promise<ProxyHarness>;
}

/** Register the per-test rig of a test file (call once at the top level). */
export function proxyRig(): ProxyRig {
  let upstream: ScriptedUpstream | undefined;
  let h: ProxyHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
    await upstream?.close();
    upstream = undefined;
  });
  return {
    get upstream(): ScriptedUpstream {
      if (!upstream) throw new Error('proxyRig: start() first');
      return upstream;
    },
    async start(config = {}, loop = {}) {
      upstream = new ScriptedUpstream();
      h = await startProxy(await upstream.start(), config, loop);
      return h;
    },
  };
}

/** Every file under a directory, as latin1 text (for searching state and logs for a secret). */
export function filesText(dir: string): string {
  const walk = (d: string): string[] => readdirSync(d).flatMap((n) => (statSync(join(d, n)).isDirectory() ? walk(join(d, n)) : [join(d, n)]));
  return walk(dir)
    .map((f) => readFileSync(f).toString('latin1'))
    .join('\n');
}
