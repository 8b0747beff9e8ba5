// Moved to support/config-fixture.ts; kept so the worker suites' imports hold until they import it from there.
export * from './support/config-fixture.ts';
