/** Where the warm-template state lives: the same SQLite file as the daemon's state. */
export { resolveStateDir, stateDbPath } from '../store/paths.js';
