// Benchmark 3: start-up of `--version`, `--help`, `list --json` against a running
// sandbox, and of `sandbox` itself, against `node -e ''`.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { BIN, median, timeCommand } from './lib.js';

/** Starts `svc-migrate sandbox --json`; resolves with the time until it serves and its address line. */
function startSandboxProcess() {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [BIN, 'sandbox', '--json'], { stdio: ['ignore', 'pipe', 'ignore'] });
    createInterface({ input: child.stdout }).once('line', (line) => {
      resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, info: JSON.parse(line), child });
    });
    child.once('error', reject);
  });
}

export async function startupBench() {
  const baseline = timeCommand(process.execPath, ['-e', '']);
  const node = { baseline, baselineName: 'node -e \'\'' };
  const sandboxRuns = [];
  for (let i = 0; i < 7; i++) {
    const { ms, child } = await startSandboxProcess();
    sandboxRuns.push(ms);
    child.kill('SIGINT');
  }
  const { info, child } = await startSandboxProcess();
  const env = { ...process.env, SVC_BASE_URL: info.baseUrl, SVC_TOKEN: info.token, SVC_ORG: info.org };
  const list = timeCommand(process.execPath, [BIN, 'list', '--json'], { env });
  child.kill('SIGINT');
  return [
    { name: 'svc-migrate --version', target: 1.5, ours: timeCommand(process.execPath, [BIN, '--version']), ...node },
    { name: 'svc-migrate --help', target: undefined, ours: timeCommand(process.execPath, [BIN, '--help']), ...node },
    { name: 'svc-migrate list --json (a running sandbox)', target: 2.5, ours: list, ...node },
    { name: 'svc-migrate sandbox (until it serves)', target: undefined, ours: median(sandboxRuns), ...node },
  ];
}
