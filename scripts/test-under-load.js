// `npm run test:under-load [-- --busy N --runs N]`: the whole suite as a busy laptop runs it, with N
// CPU-bound processes beside it (6 by default: a load of about 9 on two cores, where timing
// failures showed), N times in a row. The busy processes end with the runs, however they end.
import { spawn, spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { busy: { type: 'string', default: '6' }, runs: { type: 'string', default: '1' } } });
const busy = Number(values.busy);
const runs = Number(values.runs);

const loops = Array.from({ length: busy }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
const stop = () => loops.forEach((loop) => loop.kill('SIGKILL'));
process.on('exit', stop);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

let failed = 0;
for (let run = 1; run <= runs; run++) {
  const started = performance.now();
  const result = spawnSync('npm', ['test'], { stdio: 'inherit' });
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  const load = loadavg().map((value) => value.toFixed(1)).join(' ');
  console.log(`under load: run ${run} of ${runs} with ${busy} busy processes: ${result.status === 0 ? 'green' : `FAILED (exit ${result.status})`} in ${seconds} s; load average ${load}`);
  if (result.status !== 0) failed++;
}
// The loops are children this process waits for: they end here, or it would never exit.
stop();
process.exitCode = failed > 0 ? 1 : 0;
