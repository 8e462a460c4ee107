// Benchmark: `archive view` of the sandbox's archive of one repository with 10,000 issues and 2,000
// pull requests (issue 47: at most 60 s and 256 MB peak RSS on two cores), against `archive verify`
// of the same archive, the check every view runs first. Each run writes a fresh site; its report
// must count every issue and pull request, or the suite fails.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, median, NODE, run, sandboxWithExport } from './lib.js';

const ISSUES = 10_000;
const PULL_REQUESTS = 2_000;
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

export async function viewBench({ runs = RUNS } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-view-'));
  const archive = join(dir, 'org.tar.gz');
  try {
    const { sandbox, location } = await sandboxWithExport({ issues: ISSUES, pullRequests: PULL_REQUESTS });
    try {
      await run(`curl -sS -o ${archive} '${location}'`);
    } finally {
      await sandbox.close();
    }
    await run(`cat ${archive} > /dev/null`);
    const view = (site) => `'${NODE}' ${BIN} archive view ${archive} -o ${site} --json > ${site}.json`;
    const verify = `'${NODE}' ${BIN} archive verify ${archive} > /dev/null`;
    await run(view(join(dir, 'warm-up')));
    const ours = [];
    const checks = [];
    for (let i = 0; i < runs; i++) {
      const site = join(dir, `site-${i + 1}`);
      const [first, second] = i % 2 ? [verify, view(site)] : [view(site), verify];
      const a = await run(first);
      const b = await run(second);
      ours.push(i % 2 ? b : a);
      checks.push(i % 2 ? a : b);
      const report = JSON.parse(readFileSync(`${site}.json`, 'utf8'));
      const [repository] = report.repositories;
      if (repository?.issues !== ISSUES || repository?.pull_requests !== PULL_REQUESTS) {
        throw new Error(`the view suite: the site counts ${repository?.issues} issues and ${repository?.pull_requests} pull requests`);
      }
      process.stderr.write(`  view ${ISSUES} issues, ${PULL_REQUESTS} pull requests: ${ours.at(-1).ms.toFixed(0)} ms, ${ours.at(-1).rssMb.toFixed(0)} MB\n`);
      rmSync(site, { recursive: true, force: true });
    }
    const what = `${ISSUES.toLocaleString('en')} issues and ${PULL_REQUESTS.toLocaleString('en')} pull requests`;
    return [
      {
        name: `archive view of an archive of ${what}: verified, every page written`,
        ours: median(ours.map((one) => one.ms)),
        baseline: median(checks.map((one) => one.ms)),
        baselineName: 'archive verify of the same archive',
        absolute: { value: median(ours.map((one) => one.ms)), limit: 60_000 },
      },
      {
        name: `peak RSS of archive view of an archive of ${what}`,
        unit: 'MB',
        ours: Math.max(...ours.map((one) => one.rssMb)),
        baseline: Math.max(...checks.map((one) => one.rssMb)),
        baselineName: 'archive verify of the same archive',
        absolute: { value: Math.max(...ours.map((one) => one.rssMb)), limit: 256 },
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
