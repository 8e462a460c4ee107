// Benchmark 3 (issue 8): start-up of `svc-migrate --version`, `--help` and `sandbox`, against `node -e ''`.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { median, timeCommand } from './lib.js';

const bin = fileURLToPath(new URL('../bin/svc-migrate.js', import.meta.url));

/** Time from spawn until `svc-migrate sandbox --json` prints its address line. */
function sandboxReady() {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [bin, 'sandbox', '--json'], { stdio: ['ignore', 'pipe', 'ignore'] });
    createInterface({ input: child.stdout }).once('line', () => {
      resolve(Number(process.hrtime.bigint() - started) / 1e6);
      child.kill('SIGINT');
    });
    child.once('error', reject);
  });
}

export async function startupBench() {
  const baseline = timeCommand(process.execPath, ['-e', '']);
  const node = { baseline, baselineName: 'node -e \'\'' };
  const sandboxRuns = [];
  for (let i = 0; i < 7; i++) sandboxRuns.push(await sandboxReady());
  return [
    { name: 'svc-migrate --version', target: 1.5, ours: timeCommand(process.execPath, [bin, '--version']), ...node },
    { name: 'svc-migrate --help', target: undefined, ours: timeCommand(process.execPath, [bin, '--help']), ...node },
    { name: 'svc-migrate sandbox (until it serves)', target: undefined, ours: median(sandboxRuns), ...node },
  ];
}
