// Benchmark 3: start-up of `--version`, `--help`, `list --json` against a running sandbox (over
// HTTPS, as a service is reached; once over plain HTTP, marked so), and of `sandbox` itself, against
// `node -e ''`.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { BIN, median, NODE, timeCommand } from './lib.js';

/** Starts `svc-migrate sandbox --json`; resolves with the time until it serves and its address line. */
function startSandboxProcess(args = []) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(NODE, [BIN, 'sandbox', '--json', ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
    createInterface({ input: child.stdout }).once('line', (line) => {
      resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, info: JSON.parse(line), child });
    });
    child.once('error', reject);
  });
}

export async function startupBench() {
  const baseline = timeCommand(NODE, ['-e', '']);
  const node = { baseline, baselineName: 'node -e \'\'' };
  const sandboxRuns = [];
  for (let i = 0; i < 7; i++) {
    const { ms, child } = await startSandboxProcess();
    sandboxRuns.push(ms);
    child.kill('SIGINT');
  }
  const lists = {};
  for (const tls of [true, false]) {
    const { info, child } = await startSandboxProcess(tls ? ['--tls'] : []);
    const env = { ...process.env, SVC_BASE_URL: info.base_url, SVC_TOKEN: info.token, SVC_ORG: info.org };
    try {
      if (tls) {
        // Trusted as a public authority is (Node's own store, which NODE_EXTRA_CA_CERTS joins), and
        // as an organization's own by --ca-file, which builds a store of Node's authorities and its own.
        lists.https = timeCommand(NODE, [BIN, 'list', '--json'], { env: { ...env, NODE_EXTRA_CA_CERTS: info.ca_file } });
        lists.caFile = timeCommand(NODE, [BIN, 'list', '--json'], { env: { ...env, SVC_CA_FILE: info.ca_file } });
      } else {
        lists.plain = timeCommand(NODE, [BIN, 'list', '--json'], { env });
      }
    } finally {
      child.kill('SIGINT');
    }
  }
  return [
    { name: 'svc-migrate --version', target: 1.5, ours: timeCommand(NODE, [BIN, '--version']), ...node },
    { name: 'svc-migrate --help', target: undefined, ours: timeCommand(NODE, [BIN, '--help']), ...node },
    { name: 'svc-migrate list --json (a running sandbox, HTTPS)', target: 2.5, ours: lists.https, ...node },
    { name: 'svc-migrate list --json (HTTPS, its CA by --ca-file)', target: undefined, ours: lists.caFile, ...node },
    { name: 'svc-migrate list --json (plain HTTP, no user\'s path)', target: undefined, ours: lists.plain, ...node },
    { name: 'svc-migrate sandbox (until it serves)', target: undefined, ours: median(sandboxRuns), ...node },
  ];
}
