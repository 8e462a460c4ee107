// Benchmark 4: `list --all --json` over 10,000 migrations (100 pages) against
// @octokit/core with @octokit/plugin-paginate-rest doing the same and printing the same JSON.
import { fileURLToPath } from 'node:url';
import { BIN, median, NODE, run } from './lib.js';

export async function listingBench() {
  const { startSandbox } = await import('../dist/sandbox/server.js');
  const sandbox = await startSandbox({ exportSeconds: 0 });
  sandbox.store.bulkExports(sandbox.store.organization('octo-org'), 10_000);
  const env = { SVC_BASE_URL: sandbox.baseUrl, SVC_TOKEN: sandbox.ownerToken, SVC_ORG: 'octo-org' };
  const octokit = fileURLToPath(new URL('./octokit-list.js', import.meta.url));
  const ours = [];
  const baseline = [];
  try {
    for (let i = 0; i < 3; i++) {
      ours.push((await run(`'${NODE}' ${BIN} list --all --per-page 100 --json > /dev/null`, env)).ms);
      baseline.push((await run(`'${NODE}' ${octokit} > /dev/null`, env)).ms);
    }
  } finally {
    await sandbox.close();
  }
  return [
    {
      name: 'list --all --json, 10,000 migrations in 100 pages',
      ours: median(ours),
      baseline: median(baseline),
      baselineName: '@octokit/core + plugin-paginate-rest',
      target: 1.0,
    },
  ];
}
