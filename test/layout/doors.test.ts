// Every folder of src/ is entered through its door: an import from outside src/X/ names src/X/index.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { deepImports, doorFor, importsOf, readSources, repositoryRoot, type SourceFile } from './doors.ts';

const sources = readSources(repositoryRoot, ['src', 'bench']);

test('no module of src/ or bench/ enters a folder of src/ other than through its index.ts', () => {
  const offences = deepImports(sources).map((o) => `${o.from}:${o.line} imports ${o.target}: use ${o.door}`);
  assert.equal(offences, []);
});

test('a deep import planted in the real tree is the one offence added', () => {
  const planted: SourceFile = { path: 'src/broker/planted.ts', text: "import { unitMatchRules } from '../systemd/match-rules.ts';\n" };
  const before = deepImports(sources).length;
  const found = deepImports([...sources, planted]);
  assert.is(found.length, before + 1);
  assert.equal(found.filter((o) => o.from === planted.path), [
    { from: 'src/broker/planted.ts', target: 'src/systemd/match-rules.ts', door: 'src/systemd/index.ts', line: 1 },
  ]);
});

test('the door itself, a file of the same folder and a top-level module of src/ are fine', () => {
  const files: SourceFile[] = [
    { path: 'src/worker/warm-up.ts', text: "import { unitMatchRules, warmUpCodec } from '../systemd/index.ts';\nimport { log } from '../log.ts';\n" },
    { path: 'src/systemd/unit-watch.ts', text: "import { unitMatchRules } from './match-rules.ts';\n" },
    { path: 'bench/main.ts', text: "import { IDLE_SPARE_MS } from '../src/broker/index.ts';\nimport { stats } from './stats.ts';\n" },
  ];
  assert.equal(deepImports(files), []);
});

test('imports spread over lines, re-exports, type imports and dynamic imports are all read', () => {
  const text = [
    '// a comment',
    'import {',
    '  FdSocket,',
    '  closeQuietly,',
    "} from '../io/fd-socket.ts';",
    "import type { Config } from '../config/schema.ts';",
    "export { native } from '../native/binding.ts';",
    "const later = await import('../protocol/constants.ts');",
    "import 'node:fs';",
    "import { a } from 'dbus-next';",
  ].join('\n');
  assert.equal(importsOf(text), [
    { specifier: '../io/fd-socket.ts', line: 5 },
    { specifier: '../config/schema.ts', line: 6 },
    { specifier: '../native/binding.ts', line: 7 },
    { specifier: '../protocol/constants.ts', line: 8 },
  ]);
  const found = deepImports([{ path: 'src/broker/example.ts', text }]);
  assert.equal(
    found.map((o) => [o.target, o.door]),
    [
      ['src/io/fd-socket.ts', 'src/io/index.ts'],
      ['src/config/schema.ts', 'src/config/index.ts'],
      ['src/native/binding.ts', 'src/native/index.ts'],
      ['src/protocol/constants.ts', 'src/protocol/index.ts'],
    ],
  );
});

test('a nested folder: its own door may be named from outside; its inner files only from within the outer folder', () => {
  assert.is(doorFor('src/lib.ts', 'src/client/node-pty/index.ts'), undefined);
  assert.is(doorFor('src/lib.ts', 'src/client/node-pty/terminal.ts'), 'src/client/index.ts');
  assert.is(doorFor('src/client/client.ts', 'src/client/node-pty/terminal.ts'), 'src/client/node-pty/index.ts');
  assert.is(doorFor('src/client/node-pty/index.ts', 'src/client/node-pty/terminal.ts'), undefined);
  assert.is(doorFor('bench/main.ts', 'src/broker/worker-pool.ts'), 'src/broker/index.ts');
});

test('tests may import inner modules (they test them)', () => {
  const files: SourceFile[] = [{ path: 'test/systemd/match-rules.test.ts', text: "import { unitMatchRules } from '../../src/systemd/match-rules.ts';\n" }];
  assert.equal(deepImports(files), []);
});

test.run();
