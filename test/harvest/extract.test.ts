import { afterEach, describe, expect, it } from 'vitest';
import { errorSignature } from '../../src/text/index.js';
import {
  classifySession,
  commandHead,
  extractSession,
  findRecoveries,
  loadTranscript,
  isSyntheticText,
  pairToolCalls,
  repoFromCwd,
  scoreSession,
  userPatternCandidates,
} from '../../src/harvest/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { corpusPath, describeCorpus } from '../fixtures/corpus.js';
import { generateTranscript, writeTranscripts } from '../fixtures/transcripts.js';
import { SessionBuilder, cleanup, codingSession, tempDir } from './fixtures.js';

afterEach(cleanup);
const counter = createTokenCounter();

describe('tool calls', () => {
  it('pairs calls with results by id and names the salient argument', () => {
    const s = codingSession();
    const calls = pairToolCalls(s.messages);
    expect(calls.map((c) => [c.tool, c.kind, c.salient, c.isError])).toEqual([
      ['read_file', 'read', 'src/parser.ts', false],
      ['terminal', 'shell', 'npm test', true],
      ['patch', 'edit', 'src/parser.ts', false],
      ['terminal', 'shell', 'npm test', false],
    ]);
  });

  it('reduces shell commands to their head', () => {
    expect(commandHead('cd /repo && FOO=1 npm run build -- --watch')).toBe('npm run build');
    expect(commandHead('python -m pytest tests/x.py')).toBe('python -m pytest');
    expect(commandHead('(source .venv/bin/activate && pytest)')).toBe('pytest');
    expect(commandHead('sudo git status')).toBe('git status');
    expect(commandHead('ls -la /tmp')).toBe('ls');
  });

  it('normalizes error signatures and refuses empty ones', () => {
    expect(errorSignature('FAIL x\nError: expected 3 items but received 2 in /a/b/c.ts')).toBe('error: expected n items but received n in <path>');
    expect(errorSignature(JSON.stringify({ output: 'npm ERR! missing script: "deploy"', exit_code: 1 }))).toContain('missing script');
    expect(errorSignature(JSON.stringify({ output: '', exit_code: 1, error: null }))).toBeUndefined();
    expect(errorSignature('exit code 1')).toBeUndefined();
    // Claude Code puts a bare exit code first; the line that names the problem follows.
    expect(errorSignature("Exit code 1\nAssertionError: expected '1' to equal '2'\n    at f (src/a.ts:3:1)")).toBe('assertionerror: expected <s> to equal <s>');
    expect(errorSignature('all good')).toBeUndefined();
  });
});

describe('recoveries are kept only when a later success confirms the fix', () => {
  it('keeps fail → edit → same command succeeds', () => {
    const r = findRecoveries(pairToolCalls(codingSession().messages));
    expect(r).toHaveLength(1);
    expect(r[0]).toMatchObject({ tool: 'terminal', target: 'npm test', fix: 'patch parser.ts' });
    expect(r[0]?.signature).toContain('expected n items');
  });

  it('drops a failure that is never followed by a success of the same action', () => {
    const s = new SessionBuilder()
      .user('build it')
      .call('terminal', { command: 'npm run build' }, 'Error: cannot find module "x"', { error: true })
      .call('patch', { path: 'src/a.ts' }, 'ok')
      .call('terminal', { command: 'npm test' }, 'ok');
    expect(findRecoveries(pairToolCalls(s.messages))).toEqual([]);
  });

  it('drops an identical retry (a flake, nothing was fixed)', () => {
    const s = new SessionBuilder()
      .user('build it')
      .call('terminal', { command: 'npm run build' }, 'Error: network timed out fetching registry', { error: true })
      .call('terminal', { command: 'npm run build' }, 'built');
    expect(findRecoveries(pairToolCalls(s.messages))).toEqual([]);
  });

  it('drops shell recoveries where only the command line changed, and exploration failures', () => {
    const s = new SessionBuilder()
      .user('look around')
      .call('terminal', { command: 'ls src/missing' }, 'ls: cannot access src/missing: No such file or directory', { error: true })
      .call('terminal', { command: 'ls src' }, 'a.ts')
      .call('terminal', { command: 'pytest tests/a.py' }, 'Error: fixture "db" not found', { error: true })
      .call('terminal', { command: 'pytest tests/b.py' }, '1 passed');
    expect(findRecoveries(pairToolCalls(s.messages))).toEqual([]);
  });

  it('keeps a tool quirk fixed by calling the same tool differently', () => {
    const s = new SessionBuilder()
      .user('edit it')
      .call('patch', { path: 'a.md', old_string: 'x' }, 'Error: Found 2 matches for old_string. Provide more context to make it unique', { error: true })
      .call('patch', { path: 'a.md', old_string: 'x y z' }, 'patched');
    const r = findRecoveries(pairToolCalls(s.messages));
    expect(r).toHaveLength(1);
    expect(r[0]?.fix).toBe('retried patch with changed arguments');
  });

  it('pairs the success with the LAST failure before it', () => {
    const s = new SessionBuilder()
      .user('fix')
      .call('terminal', { command: 'npm test' }, 'Error: expected true received false', { error: true })
      .call('patch', { path: 'a.ts' }, 'ok')
      .call('terminal', { command: 'npm test' }, 'TypeError: undefined is not a function at parse', { error: true })
      .call('patch', { path: 'b.ts' }, 'ok')
      .call('terminal', { command: 'npm test' }, 'passed');
    const r = findRecoveries(pairToolCalls(s.messages));
    expect(r).toHaveLength(1);
    expect(r[0]?.signature).toContain('typeerror');
    expect(r[0]?.fix).toBe('patch b.ts');
  });

  it('in a generated Claude Code session each failing test run is recovered by the later passing run', async () => {
    const t = generateTranscript('claude-code', { seed: 4, turns: 3 });
    const [path] = writeTranscripts(tempDir(), [t]);
    const calls = pairToolCalls((await loadTranscript(path ?? '')).messages);
    expect(calls.filter((c) => c.isError)).toHaveLength(t.facts.toolErrors);
    const recoveries = findRecoveries(calls);
    // The same failure fixed the same way in every turn is one recovery pattern, not three.
    expect(recoveries).toHaveLength(1);
    for (const r of recoveries) {
      expect(calls[r.failedAt]?.isError).toBe(true);
      expect(calls[r.confirmedAt]?.isError).toBe(false);
      expect(calls[r.confirmedAt]?.salient).toBe(calls[r.failedAt]?.salient);
    }
  });
});

describeCorpus('recoveries in a real session', () => {
  it('every recovery is a failure confirmed by a later success of the same target', async () => {
    const s = await loadTranscript(corpusPath('claude-code__iansherr_claude-code-log__37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl'));
    const calls = pairToolCalls(s.messages);
    const failures = calls.filter((c) => c.isError).length;
    const recoveries = findRecoveries(calls);
    expect(failures).toBeGreaterThan(10);
    expect(recoveries.length).toBeGreaterThan(0);
    expect(recoveries.length).toBeLessThan(failures / 2); // strict: most failures are not recoveries
    for (const r of recoveries) {
      const f = calls[r.failedAt];
      const ok = calls[r.confirmedAt];
      expect(f?.isError).toBe(true);
      expect(ok?.isError).toBe(false);
      expect(ok?.tool).toBe(f?.tool);
      expect(ok?.salient).toBe(f?.salient);
      expect(r.confirmedAt).toBeGreaterThan(r.failedAt);
    }
  });
});

describe('extraction', () => {
  it('extracts task, digest, examples (never failed calls), markers, knowledge and candidates', () => {
    const ex = extractSession(codingSession().messages, { repo: 'https://github.com/acme/parser.git', cwd: '/work/parser' }, counter);
    expect(ex.task).toMatch(/^fix the failing parser test/);
    expect(ex.repo).toBe('acme/parser');
    expect(ex.taskType).toBe('code');
    expect(ex.systemDigest).toMatch(/^1 part\(s\), \d+ tokens, sha1 [0-9a-f]{10}: Project rules/);
    const examples = ex.items.filter((i) => i.kind === 'example');
    expect(examples.map((e) => e.text)).toEqual(['read_file src/parser.ts', 'patch src/parser.ts', 'terminal npm test']);
    expect(JSON.stringify(examples)).not.toContain('expected 3 items'); // the failure is no example
    expect(ex.items.filter((i) => i.kind === 'marker').map((m) => `${m.category}:${m.text}`)).toEqual(
      expect.arrayContaining(['repo:acme/parser', 'path:src/parser.ts', 'command:npm test']),
    );
    const k = ex.knowledge.map((x) => `${x.category}|${x.text}`);
    expect(k).toEqual(expect.arrayContaining(['fact|`npm test` runs successfully in this project', 'pattern|after editing, verify with `npm test`']));
    expect(k.some((x) => x.startsWith('pitfall|`npm test` can fail with'))).toBe(true);
    expect(ex.patterns).toEqual(expect.arrayContaining([{ kind: 'constraint', text: 'Never use any.' }, { kind: 'constraint', text: 'Always run npm test after edits.' }]));
    expect(ex.fingerprint).toMatch(/^[0-9a-f]{16}$/);
  });

  it('is deterministic', () => {
    const a = extractSession(codingSession().messages, {}, counter);
    const b = extractSession(codingSession().messages, {}, counter);
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  });

  it('classifies sessions by what their tools did', () => {
    const research = new SessionBuilder()
      .user('what is new in node 22?')
      .call('web_search', { query: 'node 22 release notes' }, 'results')
      .call('web_fetch', { url: 'https://nodejs.org/en/blog' }, 'page');
    expect(classifySession(pairToolCalls(research.messages), 'what is new in node 22?')).toBe('research');
    const files = new SessionBuilder()
      .user('tidy my downloads')
      .call('terminal', { command: 'mkdir -p ~/Downloads/pdf' }, '')
      .call('terminal', { command: 'mv ~/Downloads/*.pdf ~/Downloads/pdf/' }, '')
      .call('write_file', { path: 'notes/index.md' }, 'ok');
    expect(classifySession(pairToolCalls(files.messages), 'tidy my downloads')).toBe('file');
    expect(classifySession([], 'refactor the parser class and fix the build')).toBe('code');
  });

  it('scores value with a breakdown; more evidence scores higher', () => {
    const base = { conversationMessages: 10, successfulCalls: 5, confirmedRecoveries: 0, repoTemplates: 3, taskSimilarity: 0.5, ageMs: 0, outcome: 'unknown' as const };
    const low = scoreSession(base);
    const high = scoreSession({ ...base, successfulCalls: 40, confirmedRecoveries: 2, repoTemplates: 0, taskSimilarity: 0 });
    expect(high.score).toBeGreaterThan(low.score);
    expect(Object.keys(low.breakdown).sort()).toEqual(['length', 'novelty', 'outcome', 'recency', 'recovery', 'repoNovelty', 'taskNovelty', 'toolCalls']);
    expect(scoreSession({ ...base, outcome: 'failure' }).score).toBeLessThan(scoreSession({ ...base, outcome: 'success' }).score);
    expect(scoreSession({ ...base, ageMs: 90 * 86_400_000 }).score).toBeLessThan(low.score);
  });

  it('finds user constraints and style, ignoring pasted documents', () => {
    const c = userPatternCandidates(['Please fix the bug. Never commit to main.', `${'log line '.repeat(600)} Never do X.`]);
    expect(c).toEqual(expect.arrayContaining([{ kind: 'constraint', text: 'Never commit to main.' }]));
    expect(c.some((p) => p.text.includes('Never do X'))).toBe(false);
    expect(c.some((p) => p.kind === 'style')).toBe(true);
  });
});

describe('what a session is about: its project and its prompt, never harness lines', () => {
  it('names the project of a working directory, not the folder the session ran in', () => {
    expect(repoFromCwd('/Users/dain/workspace/claude-code-log/test')).toBe('claude-code-log');
    expect(repoFromCwd('/Users/dain/workspace/claude-code-log')).toBe('claude-code-log');
    expect(repoFromCwd('/home/dev/src/dateparse/')).toBe('dateparse');
    expect(repoFromCwd('/srv/billing/app/.claude/worktrees/agent-a4ca7529')).toBe('billing');
    expect(repoFromCwd('/home/ann/shop/.claude/worktrees/agent-a4ca7529')).toBe('shop');
    expect(repoFromCwd('/home/user/project')).toBe('');
    expect(repoFromCwd('/home/test')).toBe('');
    expect(repoFromCwd('')).toBe('');
  });

  it('tells harness lines from what a person wrote', () => {
    for (const t of ['[Request interrupted by user for tool use]', '[Request interrupted by user]', ' <local-command-stdout>ok</local-command-stdout>', "The user doesn't want to proceed with this tool use."]) {
      expect(isSyntheticText(t), t).toBe(true);
    }
    for (const t of ['Fix the parser', 'the request was interrupted by a timeout, find out why', '', '[WIP] rename the registry']) expect(isSyntheticText(t), t).toBe(false);
  });

  it('never takes an interruption marker as the task, title or system prompt', () => {
    const base = codingSession().messages.filter((m) => m.role !== 'system');
    const messages = [
      { id: 'x0', role: 'user' as const, text: '[Request interrupted by user for tool use]', injected: true },
      { id: 'x1', role: 'user' as const, text: '[Request interrupted by user for tool use]' },
      ...base,
    ];
    const ex = extractSession(messages, { cwd: '/Users/dain/workspace/claude-code-log/test' }, counter);
    expect(ex.task).toMatch(/^fix the failing parser test/);
    expect(ex.name).toMatch(/^fix the failing parser test/);
    expect(ex.systemDigest).toBe('');
    expect(ex.repo).toBe('claude-code-log');
  });
});
