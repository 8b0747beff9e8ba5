// A worker run from source (tests, a checkout without a build): the bundle's entry is src/boot/worker.ts.
import { run } from './main.ts';

run();
