/** The run log's old module name, kept for importers on other branches (src/plans); the module is ./run-log.ts. */
export * from './run-log.js';
