// verify: the installed files against the build's manifest and the install record, and Node against the supported range.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { paths, type InstallRecord, type Layout } from './layout.ts';
import { fileDifferences, parseManifest, type BuildManifest, type FileFacts } from './manifest.ts';
import { nodeProblems, nodeSatisfies, type NodeFacts } from './requirements.ts';

export interface VerifyFacts {
  record: InstallRecord | undefined;
  currentLink: string | undefined;
  /** The manifest to hold the installation against (the build's). */
  expected: BuildManifest;
  file(path: string): FileFacts | undefined;
  /** Every file below the version directory, relative to it. */
  listed: string[];
  unitNode: NodeFacts;
  runningNode: string;
  configProblem: string | undefined;
}

/** Every difference, one sentence each; empty means the installation is what the build shipped. */
export function verifyDifferences(layout: Layout, facts: VerifyFacts): string[] {
  const { record } = facts;
  if (!record) return [`not installed: no install record at ${paths.record(layout)}`];
  const found: string[] = [];
  if (facts.currentLink !== record.current) found.push(`${paths.current(layout)} points at ${facts.currentLink ?? 'nothing'}, expected ${record.current}`);
  const dir = paths.version(layout, record.current);
  for (const [name, artifact] of Object.entries(facts.expected.artifacts)) {
    found.push(...fileDifferences(`${dir}/${name}`, { sha256: artifact.sha256, mode: parseInt(artifact.mode, 8) }, facts.file(`${dir}/${name}`)));
  }
  for (const name of facts.listed) {
    if (name !== 'manifest.json' && !(name in facts.expected.artifacts)) found.push(`${dir}/${name}: not part of the build`);
  }
  for (const [path, hash] of Object.entries(record.files)) found.push(...fileDifferences(path, { sha256: hash, mode: 0o644 }, facts.file(path)));
  found.push(...nodeProblems(facts.unitNode, facts.expected.node).map((problem) => `the unit's Node: ${problem}`));
  if (!nodeSatisfies(facts.runningNode, facts.expected.node)) found.push(`this Node ${facts.runningNode} does not satisfy ${facts.expected.node}`);
  if (facts.configProblem) found.push(`${paths.config(layout)}: ${facts.configProblem}`);
  return found;
}

export function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else out.push(relative(dir, path));
    }
  };
  try {
    walk(dir);
  } catch {
    // A missing directory lists nothing; every artifact then reports missing.
  }
  return out.sort();
}

export function readManifestAt(dir: string): BuildManifest {
  return parseManifest(readFileSync(join(dir, 'manifest.json'), 'utf8'));
}
