/**
 * What warm selection and rendering read templates through: the SQLite template store, or
 * the warm snapshot (a JSON copy the hook reads when the daemon is down, see snapshot-source.ts).
 */
import type { TemplateStore } from '../store/templates.js';

/** The read side of the template store that `selectTemplates` and `bootstrap` use. */
export type TemplateSource = Pick<TemplateStore, 'search' | 'list' | 'summaries' | 'get' | 'knowledgeFor' | 'patterns'>;
