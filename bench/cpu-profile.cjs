// Preloaded (NODE_OPTIONS=--require) into the supervisor's processes by `npm run bench -- --profile`:
// Node 20 refuses --cpu-prof in NODE_OPTIONS, so the inspector's profiler is started here instead
// and the profile written to $OPENCODE_PTY_PROFILE_DIR/<pid>-<argv1>.cpuprofile at exit.
'use strict';
const { Session } = require('node:inspector');
const { writeFileSync } = require('node:fs');
const { basename, join } = require('node:path');

const dir = process.env.OPENCODE_PTY_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 200 });
  session.post('Profiler.start');
  const name = `${process.pid}-${basename(process.argv[1] ?? 'node', '.js')}.cpuprofile`;
  let written = false;
  const write = () => {
    if (written) return;
    written = true;
    // Synchronous inside 'exit': the callback runs at once on the inspector's in-process session.
    session.post('Profiler.stop', (error, result) => {
      if (!error) writeFileSync(join(dir, name), JSON.stringify(result.profile));
    });
  };
  process.on('exit', write);
}
