import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startMigration } from '../../src/api/migrations.js';
import { verifyArchive } from '../../src/core/archive/verify.js';
import { downloadArchive } from '../../src/core/download.js';
import { coreSandbox } from '../helpers/core-sandbox.js';

// The archive check runs `git fsck` on several repositories at once, as many as the cores, at most
// 4. A `git` first on PATH stands in front of the real one: each `fsck` notes that it started and,
// before it goes on, waits for another to start (a ceiling of 10 s, so a check that runs them one
// after another is slow and found out, not hung), then notes how many were running.

const REPOSITORIES = 6;
/** Repositories git checks: repo-0003's wiki is one of its own. */
const GIT_DATA = REPOSITORIES + 1;
const CAP = Math.min(4, availableParallelism());
const realGit = spawnSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).stdout.trim();

function gitInFront(): { dir: string; log: string } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-git-front-'));
  const log = join(dir, 'log');
  mkdirSync(log);
  const script = `#!/bin/sh
log='${log}'
case " $* " in
  *" fsck "*)
    : > "$log/start.$$"
    i=0
    while [ "$(ls "$log" | grep -c '^start\\.')" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
    echo $(( $(ls "$log" | grep -c '^start\\.') - $(ls "$log" | grep -c '^end\\.') )) > "$log/running.$$"
    '${realGit}' "$@"
    code=$?
    : > "$log/end.$$"
    exit $code;;
esac
exec '${realGit}' "$@"
`;
  writeFileSync(join(dir, 'git'), script);
  chmodSync(join(dir, 'git'), 0o755);
  return { dir, log };
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe.skipIf(!realGit)('the git check of an archive of several repositories', () => {
  it.skipIf(CAP < 2)(`runs git fsck on ${CAP} repositories at once, never more, and tells how many are checked (skipped: one core)`, async () => {
    const { sandbox, api, clock, org } = await coreSandbox({ exportSeconds: 0, repositories: REPOSITORIES });
    const names = Array.from({ length: REPOSITORIES }, (_, i) => `${org}/repo-${String(i + 1).padStart(4, '0')}`);
    const migration = await startMigration(api, org, { repositories: names });
    sandbox.clock.advance(1000);
    const path = join(mkdtempSync(join(tmpdir(), 'svc-git-parallel-')), 'archive.tar.gz');
    const target = { path, force: false };
    await downloadArchive(api, { org, id: migration.id, target, checksum: true, verify: false, clock: clock.program });

    const front = gitInFront();
    vi.stubEnv('PATH', `${front.dir}:${process.env.PATH ?? ''}`);
    const progress: string[] = [];
    const report = await verifyArchive(path, { onGitProgress: ({ checked, total }) => progress.push(`${checked}/${total}`) });

    expect(report.problems).toEqual([]);
    expect(report).toMatchObject({ ok: true, git_check: 'passed' });
    expect(report.repositories.map((r) => r.git_check)).toEqual(Array(GIT_DATA).fill('passed'));
    const files = readdirSync(front.log);
    expect(files.filter((f) => f.startsWith('start.'))).toHaveLength(GIT_DATA);
    const running = files.filter((f) => f.startsWith('running.')).map((f) => Number(readFileSync(join(front.log, f), 'utf8')));
    expect(Math.max(...running)).toBeGreaterThanOrEqual(2);
    expect(Math.max(...running)).toBeLessThanOrEqual(CAP);
    expect(progress).toEqual(Array.from({ length: GIT_DATA + 1 }, (_, i) => `${i}/${GIT_DATA}`));
  }, 60_000);
});
