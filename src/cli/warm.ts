/**
 * `contextd warm …`: inspect, harvest, export/import and try out warm-start templates.
 */
import type { Command } from 'commander';
import { harvestFiles, redactAll, type HarvestProgress } from '../harvest/index.js';
import { createTokenCounter } from '../model/tokens.js';
import type { Db } from '../store/db.js';
import { TemplateStore } from '../store/templates.js';
import { createLogger } from '../util/logger.js';
import { bootstrap, exportTemplates, importTemplates, testTemplate } from '../warm/index.js';
import { openStateForCli } from './state.js';
import { resolveStateDir } from '../store/paths.js';
import { refreshWarmSnapshot } from '../warm/snapshot.js';
import { parsePositiveInt, pct, printJson, printLine } from './output.js';
import { ContextdError, ErrorCode } from '../util/errors.js';

interface StateFlags {
  state?: string;
  json?: boolean;
}

interface BootstrapFlags extends StateFlags {
  repo?: string;
  budget?: number;
}

const STATE_HELP = 'state directory (default $XDG_STATE_HOME/contextd, else ~/.local/state/contextd)';

function withStore<T>(flags: StateFlags, create: boolean, fn: (store: TemplateStore, db: Db) => T): T {
  const db = openStateForCli(flags.state, { create });
  try {
    return fn(new TemplateStore(db), db);
  } finally {
    db.close();
  }
}

async function withStoreAsync<T>(flags: StateFlags, create: boolean, fn: (store: TemplateStore) => Promise<T>): Promise<T> {
  const db = openStateForCli(flags.state, { create });
  try {
    return await fn(new TemplateStore(db));
  } finally {
    db.close();
  }
}

/** After a command changed templates: rewrite the warm snapshot the hook reads while the daemon is down. */
function templatesChanged(flags: StateFlags, store: TemplateStore): void {
  refreshWarmSnapshot(store, resolveStateDir(flags.state), createLogger({ level: 'warn' }));
}

function pad(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s.padEnd(n);
}

function progressBar(p: HarvestProgress, startedMs: number): string {
  const width = 28;
  const filled = Math.round((p.done / Math.max(1, p.total)) * width);
  const rate = p.done / Math.max(0.001, (performance.now() - startedMs) / 1000);
  return `\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${p.done}/${p.total} files  ${rate.toFixed(1)} files/s `;
}

/** Register `contextd warm` and its subcommands. */
export function registerWarm(program: Command): void {
  const warm = program.command('warm').description('warm-start templates harvested from finished sessions');

  warm
    .command('list')
    .description('list templates: id, name, task type, sessions, usage, success rate')
    .option('--state <dir>', STATE_HELP)
    .option('--json', 'print one JSON document')
    .action((flags: StateFlags) => {
      withStore(flags, false, (store) => {
        const list = store.list();
        if (flags.json) return printJson({ templates: list });
        if (list.length === 0) return printLine('no templates yet (try `contextd warm harvest DIR`)');
        printLine(`${pad('id', 16)} ${pad('name', 40)} ${pad('type', 8)} ${'sessions'.padStart(8)} ${'usage'.padStart(6)} ${'success'.padStart(8)}`);
        for (const t of list) {
          const success = t.usageCount > 0 ? pct(t.successCount / t.usageCount) : '-';
          printLine(`${pad(t.id, 16)} ${pad(t.name, 40)} ${pad(t.taskType, 8)} ${String(t.sessionCount).padStart(8)} ${String(t.usageCount).padStart(6)} ${success.padStart(8)}`);
        }
      });
    });

  warm
    .command('show')
    .description('show one template with its items and knowledge')
    .argument('<id>', 'template id')
    .option('--state <dir>', STATE_HELP)
    .option('--json', 'print one JSON document')
    .action((id: string, flags: StateFlags) => {
      withStore(flags, false, (store) => {
        const t = store.get(id);
        if (!t) throw new ContextdError(ErrorCode.UNKNOWN_TEMPLATE, `no template ${id} (see \`contextd warm list\`)`, { id });
        if (flags.json) return printJson(t);
        printLine(`${t.id}  ${t.name}`);
        printLine(`type ${t.taskType}  repo ${t.repo || '-'}  sessions ${t.sessionCount}  usage ${t.usageCount}  success ${t.successCount}  failure ${t.failureCount}`);
        printLine(`value ${t.valueScore}  ${Object.entries(t.valueBreakdown).map(([k, v]) => `${k}=${v}`).join(' ')}`);
        printLine(`task: ${t.task}`);
        if (t.systemDigest) printLine(`system: ${t.systemDigest}`);
        for (const [kind, heading] of [['recovery', 'recoveries'], ['example', 'examples'], ['marker', 'markers']] as const) {
          const items = t.items.filter((i) => i.kind === kind);
          if (items.length === 0) continue;
          printLine(`${heading}:`);
          for (const i of items) printLine(`  [${i.category}] ${i.text}  (evidence ${i.evidence}, confidence ${i.confidence.toFixed(2)})`);
        }
        if (t.knowledge.length > 0) printLine('knowledge:');
        for (const k of t.knowledge) printLine(`  [${k.category}] ${k.text}  (evidence ${k.evidence}, confidence ${k.confidence.toFixed(2)})`);
        printLine(`created ${new Date(t.createdAt).toISOString()}  updated ${new Date(t.updatedAt).toISOString()}`);
      });
    });

  warm
    .command('delete')
    .description('delete a template')
    .argument('<id>', 'template id')
    .option('--state <dir>', STATE_HELP)
    .option('--json', 'print one JSON document')
    .action((id: string, flags: StateFlags) => {
      withStore(flags, false, (store) => {
        const deleted = store.delete(id);
        if (!deleted) throw new ContextdError(ErrorCode.UNKNOWN_TEMPLATE, `no template ${id} (see \`contextd warm list\`)`, { id });
        templatesChanged(flags, store);
        if (flags.json) printJson({ deleted: id });
        else printLine(`deleted ${id}`);
      });
    });

  warm
    .command('harvest')
    .description('harvest transcript files or directories (recursive *.jsonl) into templates')
    .argument('<paths...>', 'transcript files or directories')
    .option('--state <dir>', STATE_HELP)
    .option('--json', 'print one JSON document')
    .action(async (paths: string[], flags: StateFlags) => {
      await withStoreAsync(flags, true, async (store) => {
        const logger = createLogger({ level: 'warn' });
        const tty = process.stderr.isTTY === true && !flags.json;
        const started = performance.now();
        const summary = await harvestFiles(paths, { store, tokenCounter: createTokenCounter(), logger }, (p) => {
          if (tty) process.stderr.write(progressBar(p, started));
        });
        if (tty) process.stderr.write('\n');
        templatesChanged(flags, store);
        if (flags.json) return printJson(summary);
        printLine(`${summary.files} files: ${summary.harvested} harvested (${summary.merged} merged into existing templates), ${summary.skipped} skipped, ${summary.failed.length} failed`);
        for (const [reason, n] of Object.entries(summary.skippedReasons)) printLine(`  skipped ${reason}: ${n}`);
        for (const f of summary.failed) printLine(`  failed ${f.file}: ${f.error}`);
        printLine(`${summary.filesPerSecond} files/s, ${summary.templates.length} templates touched, ${store.count()} in store`);
        if (summary.failed.length > 0 && summary.harvested === 0 && summary.skipped === 0) process.exitCode = 1;
      });
    });

  warm
    .command('export')
    .description('export all templates to a JSON file')
    .argument('<file>', 'output file')
    .option('--state <dir>', STATE_HELP)
    .option('--json', 'print one JSON document')
    .action(async (file: string, flags: StateFlags) => {
      await withStoreAsync(flags, false, async (store) => {
        const r = await exportTemplates(store, file);
        if (flags.json) printJson({ file, ...r });
        else printLine(`exported ${r.templates} templates and ${r.patterns} user patterns to ${file}`);
      });
    });

  warm
    .command('import')
    .description('import templates from an export file; bad records are reported and skipped (exit 1)')
    .argument('<file>', 'export file')
    .option('--state <dir>', STATE_HELP)
    .option('--json', 'print one JSON document')
    .action(async (file: string, flags: StateFlags) => {
      await withStoreAsync(flags, true, async (store) => {
        const report = await importTemplates(store, file, redactAll);
        templatesChanged(flags, store);
        if (report.bad.length > 0) process.exitCode = 1;
        if (flags.json) return printJson(report);
        printLine(`imported ${report.templates.created} new templates, merged ${report.templates.merged}, ${report.patterns} user patterns`);
        for (const b of report.bad) printLine(`  bad ${b.kind} #${b.index}: ${b.error}`);
      });
    });

  warm
    .command('bootstrap')
    .description('print what warm.bootstrap would return for a task')
    .argument('<task>', 'task description')
    .option('--repo <repo>', 'repository (owner/name or URL) to prefer')
    .option('--budget <tokens>', 'token budget', parsePositiveInt('--budget'), 2000)
    .option('--state <dir>', STATE_HELP)
    .option('--json', 'print one JSON document')
    .action((task: string, flags: BootstrapFlags) => {
      withStore(flags, false, (store) => {
        const r = bootstrap({ task, repo: flags.repo, budgetTokens: flags.budget }, { store, tokenCounter: createTokenCounter() });
        if (flags.json) return printJson(r);
        if (r.messages.length === 0) return printLine('no template matches this task');
        for (const m of r.messages) printLine(m.content);
        printLine();
        printLine(`(${r.tokens} tokens of ${flags.budget ?? 2000}; task type ${r.taskType}; templates ${r.templateIds.join(', ')})`);
      });
    });

  warm
    .command('test')
    .description('print the messages one template would add for a task')
    .argument('<id>', 'template id')
    .argument('<task>', 'task description')
    .option('--repo <repo>', 'repository (owner/name or URL)')
    .option('--budget <tokens>', 'token budget', parsePositiveInt('--budget'), 2000)
    .option('--state <dir>', STATE_HELP)
    .option('--json', 'print one JSON document')
    .action((id: string, task: string, flags: BootstrapFlags) => {
      withStore(flags, false, (store) => {
        const r = testTemplate(id, { task, repo: flags.repo, budgetTokens: flags.budget }, { store, tokenCounter: createTokenCounter() });
        if (flags.json) return printJson(r);
        if (r.messages.length === 0) return printLine(`template ${id} renders nothing within ${flags.budget ?? 2000} tokens`);
        for (const m of r.messages) printLine(m.content);
        printLine();
        printLine(`(${r.tokens} tokens)`);
      });
    });
}
