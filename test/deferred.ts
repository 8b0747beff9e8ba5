// Moved to support/deferred.ts; kept so the worker suites' imports hold until they import it from there.
export * from './support/deferred.ts';
