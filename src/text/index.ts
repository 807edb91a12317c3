/**
 * The text module: every rule for reading agent text lives here once — word tokenizing and
 * stop words, paths and URLs, identifiers and config values, stack traces, error lines, exit
 * statuses and test verdicts, sentences and constraints, hashes. A leaf: it imports nothing
 * from the project, and every area (model, compact, harvest, warm, store, bench) may import it.
 */
export * from './chars.js';
export * from './hash.js';
export * from './prose.js';
export * from './words.js';
export * from './lines.js';
export * from './paths.js';
export * from './code.js';
export * from './errors.js';
export * from './tasks.js';
export * from './diff.js';
