export { openDb, migrate, WAL_SIZE_LIMIT_BYTES, wrapStoreError, secureStateDir, secureStateFiles, type Db, type OpenDbOptions, type SecuredDir } from './db.js';
export { MIGRATIONS, type Migration } from './migrations.js';
export { HeadroomLog, type HeadroomSample } from './headroom.js';
export { Archive, archivedText, type ArchivedEdit, type ArchivedMessage, type ArchiveHit, type ArchiveSearchOptions, type RedactionCount } from './archive.js';
export { matchAny, matchTerms, matchText } from './fts.js';
export { ModelSteps, type ModelStep, type StoredSteps } from './model-steps.js';
export { PlanLog, type AppliedAt, type PlanStatus, type StoredPlan } from './plans.js';
export { TokenCounts, type TokenCountRow } from './token-counts.js';
export { DerivedData, DERIVED_DATA_MAX_ROWS, DERIVED_DATA_PURGE_PER_START, type DerivedDataRow } from './derived-data.js';
