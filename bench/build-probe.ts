// Bundles the in-sandbox probe (bench/probe.ts with the client library) into one file that runs
// beside the supervisor's bundle, where it finds the native addon.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

export async function buildProbe(): Promise<string> {
  const outfile = `${root}.bench/bench-probe.js`;
  await build({
    entryPoints: [`${root}bench/probe.ts`],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    banner: { js: "import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  return outfile;
}
