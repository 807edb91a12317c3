/**
 * warm: template selection, bootstrap rendering, outcome feedback, export/import.
 */
export {
  bootstrap,
  testTemplate,
  recordOutcome,
  DEFAULT_BOOTSTRAP_BUDGET,
  type BootstrapRequest,
  type BootstrapResult,
  type WarmDeps,
} from './bootstrap.js';
export { selectTemplates, normalizeRepo, promptRelevance, OTHER_REPO_FLOOR, SELECTION_WEIGHTS, type ScoredTemplate, type SelectionQuery, type SelectionOptions } from './select.js';
export { renderBootstrap, type RenderInput, type Rendered, type RenderedMessage } from './render.js';
export {
  exportTemplates,
  exportDocument,
  importTemplates,
  templateRecordSchema,
  patternRecordSchema,
  EXPORT_FORMAT,
  type ImportReport,
  type TemplateRecord,
  type TextRedactor,
} from './exchange.js';
export { resolveStateDir, stateDbPath } from '../store/paths.js';
