// Benchmark 7: a whole organization (1,000 repositories, batches of 50) exported by one
// `export --output-dir … --parallel 4`, against the same batches exported one after another with
// single `export` commands (the shell loop a user writes today). Same sandbox, same run, the same
// step list on both sides: lock, download, verify, unlock, delete the archive.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NODE, run } from './lib.js';

const REPOSITORIES = 1000;
const BATCH = 50;

export async function orgExportBench() {
  const { startSandbox } = await import('../dist/sandbox/server.js');
  // Export time as `svc-migrate sandbox` has it by default: 10 s plus 0.1 s per repository, 15 s
  // for a batch of 50 (real exports take minutes). The "spammed" refusal is lifted (the service's
  // threshold is not published): both sides start the same 20 migrations.
  const sandbox = await startSandbox({
    repositories: REPOSITORIES,
    exportSeconds: 10,
    exportSecondsPerRepository: 0.1,
    requestLogLimit: 1_000_000,
    spamLimit: { starts: 1000, windowSeconds: 60 },
  });
  const env = { SVC_BASE_URL: sandbox.baseUrl, SVC_TOKEN: sandbox.ownerToken, SVC_ORG: 'octo-org' };
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-org-'));
  const names = Array.from({ length: REPOSITORIES }, (_, i) => `repo-${String(i + 1).padStart(4, '0')}`);
  writeFileSync(join(dir, 'repos.txt'), `${names.join('\n')}\n`);
  const bin = new URL('../bin/svc-migrate.js', import.meta.url).pathname;
  const steps = '--lock --unlock --delete-archive --yes';
  try {
    // The loop first: each batch waits for the one before it.
    const loop = [];
    for (let i = 0; i < names.length; i += BATCH) {
      loop.push(`'${NODE}' ${bin} export ${names.slice(i, i + BATCH).join(' ')} -o ${dir}/loop-${i / BATCH + 1}.tar.gz ${steps} --quiet`);
    }
    const loopRun = await run(loop.join(' && '), env);
    const loopRequests = sandbox.requests.filter((r) => r.origin === 'api').length;

    const mark = sandbox.requests.length;
    const oursRun = await run(
      `'${NODE}' ${bin} export --repos-file ${dir}/repos.txt --output-dir ${dir}/org --batch-size ${BATCH} --parallel 4 ${steps} --quiet`,
      env,
    );
    const oursRequests = sandbox.requests.slice(mark).filter((r) => r.origin === 'api').length;
    return [
      {
        name: `org export, 1,000 repositories in batches of 50, --parallel 4: wall time (peak RSS ${oursRun.rssMb.toFixed(0)} MB; the loop's largest process ${loopRun.rssMb.toFixed(0)} MB)`,
        ours: oursRun.ms,
        baseline: loopRun.ms,
        baselineName: 'the same batches, one export command after another',
        target: 0.35,
      },
      {
        name: 'org export, 1,000 repositories: API requests',
        ours: oursRequests,
        baseline: loopRequests,
        baselineName: 'the same batches, one export command after another',
        target: 1.0,
        unit: 'requests',
      },
    ];
  } finally {
    await sandbox.close();
  }
}
