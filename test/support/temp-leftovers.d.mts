// Types of temp-leftovers.mjs (plain JavaScript, so test/run.mjs runs it without tsx).
export interface SuiteListing {
  name: string;
  pid?: number;
  before: string[];
  after: string[];
}
export function ourPrefixes(root: string, dirs?: string[]): string[];
export function otherRunners(self?: number): number[];
export function tempLeftovers(run: { start: string[]; end: string[]; suites: SuiteListing[]; prefixes: string[]; concurrent?: number[] }): {
  leftovers: { name: string; suite: string }[];
  notes: string[];
  fail: boolean;
};
