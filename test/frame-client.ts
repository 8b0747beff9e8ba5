// Moved to support/frame-client.ts; kept so the worker suites' imports hold until they import it from there.
export * from './support/frame-client.ts';
