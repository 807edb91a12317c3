import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { harvestFiles, harvestSession } from '../../src/harvest/index.js';
import { createTokenCounter, MESSAGE_OVERHEAD_TOKENS } from '../../src/model/tokens.js';
import { TemplateStore } from '../../src/store/templates.js';
import { silentLogger } from '../../src/util/logger.js';
import { bootstrap, OTHER_REPO_FLOOR, recordOutcome, selectTemplates, testTemplate } from '../../src/warm/index.js';
import { CORPUS_DIR, describeCorpus } from '../fixtures/corpus.js';
import { generatedCorpus, writeTranscripts } from '../fixtures/transcripts.js';
import { SessionBuilder, cleanup, codingSession, tempDir, tempStore } from '../harvest/fixtures.js';

const counter = createTokenCounter();
const deps = (store: TemplateStore) => ({ store, tokenCounter: counter, logger: silentLogger() });

describe('bootstrap over generated sessions', () => {
  it('never exceeds the token budget, counted with the same TokenCounter (property)', async () => {
    const dir = tempDir();
    writeTranscripts(dir, generatedCorpus());
    const { store } = tempStore();
    const summary = await harvestFiles([dir], deps(store));
    expect(summary.failed).toEqual([]);
    expect(summary.harvested).toBeGreaterThan(0);
    fc.assert(
      fc.property(fc.array(fc.constantFrom('fix', 'date', 'parser', 'offset', 'widgets', 'test', 'zone', 'the'), { minLength: 1, maxLength: 10 }), fc.integer({ min: 1, max: 3000 }), fc.option(fc.constantFrom('acme/dateparse', 'octo/widgets', 'acme/none')), (task, budget, repo) => {
        const r = bootstrap({ task: task.join(' '), budgetTokens: budget, repo: repo ?? undefined }, { store, tokenCounter: counter });
        const recount = r.messages.reduce((n, m) => n + counter.count(m.content) + MESSAGE_OVERHEAD_TOKENS, 0);
        expect(r.tokens).toBe(recount);
        expect(r.tokens).toBeLessThanOrEqual(budget);
      }),
      { numRuns: 60 },
    );
    cleanup();
  });
});

describeCorpus('bootstrap over the real corpus', () => {
  let store: TemplateStore;
  beforeAll(async () => {
    store = tempStore().store;
    const summary = await harvestFiles([CORPUS_DIR ?? ''], deps(store));
    expect(summary.failed).toEqual([]);
    expect(summary.harvested).toBeGreaterThanOrEqual(10);
  });
  afterEach(() => undefined);

  it('never exceeds the token budget, counted with the same TokenCounter (property)', () => {
    const words = ['fix', 'parser', 'test', 'html', 'renderer', 'garden', 'tent', 'session', 'viewer', 'zip', 'export', 'deploy', 'readme', 'python', 'uv', 'ruff', 'git', 'merge', 'research', 'plan', 'mode', 'browser', 'skills', 'the', 'a'];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 12 }), fc.integer({ min: 1, max: 3000 }), fc.option(fc.constantFrom('AcidicSoil/codex-session-viewer', 'acme/none')), (task, budget, repo) => {
        const r = bootstrap({ task: task.join(' '), budgetTokens: budget, repo: repo ?? undefined }, { store, tokenCounter: counter });
        const recount = r.messages.reduce((n, m) => n + counter.count(m.content) + MESSAGE_OVERHEAD_TOKENS, 0);
        expect(r.tokens).toBe(recount);
        expect(r.tokens).toBeLessThanOrEqual(budget);
        if (r.messages.length === 0) expect(r.templateIds).toEqual([]);
      }),
      { numRuns: 150 },
    );
  });

  it('renders one compact system message with knowledge, context and examples for a matching task', () => {
    const r = bootstrap({ task: 'fix the failing tests for the combined transcript link in the html renderer' }, { store, tokenCounter: counter });
    expect(r.messages).toHaveLength(1);
    expect(r.messages[0]?.role).toBe('system');
    const text = r.messages[0]?.content ?? '';
    expect(text).toMatch(/^\[contextd warm start\]/);
    expect(text).toContain('Context:');
    expect(text).toContain('Tool calls that worked:');
    expect(r.tokens).toBeLessThanOrEqual(2000);
    expect(r.tokens).toBeGreaterThan(200);
    expect(r.templateIds.length).toBeGreaterThan(0);
    expect(r.taskType).toBe('code');
  });

  it('prefers the template of the requested repo', () => {
    const r = selectTemplates(store, { task: 'what should I work on next', repo: 'https://github.com/AcidicSoil/codex-session-viewer.git' });
    expect(r.ranked[0]?.template.repo).toBe('AcidicSoil/codex-session-viewer');
    expect(r.ranked[0]?.parts.repo).toBe(1);
  });

  it('a tiny budget yields nothing rather than an over-budget message', () => {
    const r = bootstrap({ task: 'fix the parser', budgetTokens: 5 }, { store, tokenCounter: counter });
    expect(r).toMatchObject({ messages: [], tokens: 0, templateIds: [] });
  });
});

describe('line-wise token counting', () => {
  it('the sum of per-line counts equals the count of the joined text for rendered-shape lines (property)', () => {
    const unit = fc.constantFrom('a', 'B', ' ', '.', '-', '`', '[', ']', '1', 'é', '😀', ':', '/', '"', '→', '…', "'", 's');
    fc.assert(
      fc.property(fc.array(fc.string({ unit, minLength: 1, maxLength: 40 }).map((s) => `- ${s.replace(/\s+/g, ' ').trim()}`), { minLength: 1, maxLength: 12 }), (lines) => {
        const sum = lines.reduce((n, l, i) => n + counter.count(i < lines.length - 1 ? `${l}\n` : l), 0);
        expect(sum).toBe(counter.count(lines.join('\n')));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('selection and feedback', () => {
  afterEach(cleanup);

  it('a bootstrap for repo A prefers A and leaves out another repo below the relevance floor', async () => {
    const { store } = tempStore();
    const parser = await harvestSession({ sessionId: 'parser', messages: codingSession().messages, meta: { repo: 'acme/parser' } }, deps(store));
    // Another repo's code task on something else entirely: same task type, no shared subject.
    const deploy = codingSession({ task: 'tune the kubernetes ingress timeouts for the billing gateway service', file: 'deploy/ingress.yaml', start: Date.parse('2026-11-20T12:00:00Z') });
    const other = await harvestSession({ sessionId: 'deploy', messages: deploy.messages, meta: { repo: 'octo/billing' } }, deps(store));
    expect(parser.templateId && other.templateId).toBeTruthy();
    expect(parser.templateId).not.toBe(other.templateId);

    const task = 'fix the failing parser test when a line ends with a comma';
    const r = selectTemplates(store, { task, repo: 'acme/parser' });
    expect(r.ranked.map((s) => s.template.repo)).toEqual(['acme/parser']);
    const rendered = bootstrap({ task, repo: 'acme/parser' }, { store, tokenCounter: counter });
    expect(rendered.templateIds).toEqual([parser.templateId]);
    expect(rendered.messages.map((m) => m.content).join('\n')).not.toContain('ingress');
    // Without the floor the other repo's template came in on its task type alone.
    const unfloored = selectTemplates(store, { task, repo: 'acme/parser' }, { otherRepoFloor: 0 });
    expect(unfloored.ranked.map((s) => s.template.repo)).toContain('octo/billing');

    // Another repo's template that is about the prompt clears the floor, ranked after A's own.
    const relevant = selectTemplates(store, { task: 'tune the ingress timeouts of the billing gateway', repo: 'acme/parser' });
    expect(relevant.ranked.map((s) => s.template.repo)).toEqual(['acme/parser', 'octo/billing']);
    expect(relevant.ranked[1]?.relevance).toBeGreaterThanOrEqual(OTHER_REPO_FLOOR);
  });

  it('a working directory names its project the way harvest stored it (a subfolder or worktree of it included)', async () => {
    const { store } = tempStore();
    // harvested from a session that ran in a subfolder: stored under the project's name
    const own = await harvestSession({ sessionId: 'sub', messages: codingSession().messages, meta: { cwd: '/home/dev/work/claude-code-log/test' } }, deps(store));
    const deploy = codingSession({ task: 'tune the kubernetes ingress timeouts for the billing gateway service', file: 'deploy/ingress.yaml', start: Date.parse('2026-11-20T12:00:00Z') });
    await harvestSession({ sessionId: 'deploy', messages: deploy.messages, meta: { repo: 'octo/billing' } }, deps(store));
    const task = 'fix the failing parser test when a line ends with a comma';
    for (const cwd of ['/home/dev/work/claude-code-log/test', '/home/dev/work/claude-code-log/.claude/worktrees/agent-1a2b3c4d']) {
      const r = selectTemplates(store, { task, repo: cwd });
      expect(r.ranked[0]?.template.id).toBe(own.templateId);
      expect(r.ranked[0]?.parts.repo).toBeGreaterThan(0);
      expect(r.ranked.map((t) => t.template.repo)).not.toContain('octo/billing');
    }
  });

  it('breaks ties by success rate, fed by recordOutcome', async () => {
    const { store, db } = tempStore();
    // Two templates with identical text in two different (unrequested) repos…
    const a = await harvestSession({ sessionId: 'a', messages: codingSession().messages, meta: { repo: 'acme/one' } }, deps(store));
    // (a session of its own: the same transcript content, whatever its ids or times, would count once)
    const b = await harvestSession({ sessionId: 'b', messages: codingSession({ start: Date.parse('2026-11-20T12:00:00Z'), system: '# Project rules\nUse TypeScript strict mode.\nCheckout: ~/work/two' }).messages, meta: { repo: 'acme/two' } }, deps(store));
    expect(a.templateId).not.toBe(b.templateId);
    // …and the same harvest value (the second one scored lower on novelty): a perfect tie.
    db.prepare('UPDATE templates SET value_score = 0.5').run();
    const before = selectTemplates(store, { task: 'fix the failing parser test' }).ranked;
    expect(before[0]?.score).toBe(before[1]?.score);
    const loser = before[0]?.template.id ?? '';
    const winner = before[1]?.template.id ?? '';
    recordOutcome([loser], 'failure', { store });
    recordOutcome([winner], 'success', { store });
    const after = selectTemplates(store, { task: 'fix the failing parser test' }).ranked;
    expect(after[0]?.template.id).toBe(winner);
    expect(store.summaries([winner])[0]).toMatchObject({ usageCount: 1, successCount: 1 });
  });

  it('classifies the task and matches lexically; an empty store bootstraps nothing', async () => {
    const { store } = tempStore();
    expect(bootstrap({ task: 'anything' }, { store, tokenCounter: counter })).toMatchObject({ messages: [], tokens: 0, templateIds: [] });
    await harvestSession({ sessionId: 'code', messages: codingSession().messages }, deps(store));
    const research = new SessionBuilder()
      .user('research the best practice for node stream backpressure and explain it')
      .call('web_search', { query: 'node stream backpressure' }, 'results')
      .call('web_fetch', { url: 'https://nodejs.org/en/learn/modules/backpressuring-in-streams' }, 'Backpressure happens when…')
      .assistant('Here is how backpressure works.');
    await harvestSession({ sessionId: 'research', messages: research.messages }, deps(store));
    const r = bootstrap({ task: 'explain backpressure in node streams' }, { store, tokenCounter: counter });
    expect(r.taskType).toBe('research');
    expect(r.candidates[0]?.name).toMatch(/^research the best practice/);
    expect(r.messages[0]?.content).toContain('https://nodejs.org/en/learn/modules/backpressuring-in-streams');
  });

  it('testTemplate renders a single template and rejects unknown ids', async () => {
    const { store } = tempStore();
    const h = await harvestSession({ sessionId: 'a', messages: codingSession().messages }, deps(store));
    const r = testTemplate(h.templateId ?? '', { task: 'anything at all', budgetTokens: 400 }, { store, tokenCounter: counter });
    expect(r.templateIds).toEqual([h.templateId]);
    expect(r.tokens).toBeLessThanOrEqual(400);
    expect(r.messages[0]?.content).toContain('npm test');
    expect(() => testTemplate('t-nope0000', { task: 'x' }, { store, tokenCounter: counter })).toThrow(/no template/);
    expect(() => bootstrap({ task: 'x', budgetTokens: 0 }, { store, tokenCounter: counter })).toThrow(/positive integer/);
  });
});
