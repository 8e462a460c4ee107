import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { hasBsdtar } from '../helpers/extractor-differential.js';
import { slowStartGzip } from '../helpers/gzip-bytes.js';
import { metadata, type RealRepository, readingHoles, realRepository, repositoryMembers } from '../helpers/hostile-archives.js';
import { spawnCli } from '../helpers/run-cli.js';
import { sandboxArchive } from '../helpers/sandbox.js';
import { tarOf } from '../helpers/tar-bytes.js';

// Issue #42 through the built binary: archives `archive verify` read as one thing while GNU tar
// extracts another, or that a case-insensitive file system extracts as fewer files than were
// checked. Each must fail verification (exit 9), every problem one line; an honest re-pack with
// `tar czf -C DIR .` must verify as the original did.

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-verify-as-extracted-'));
const C_UTF8 = { PATH: process.env.PATH ?? '', LC_ALL: 'C.UTF-8' };

interface Report {
  ok: boolean;
  repositories: { name: string }[];
  problems: { repository?: string; file?: string; message: string }[];
}

function writeArchive(bytes: Buffer): string {
  const file = join(tempDir(), 'a.tar.gz');
  writeFileSync(file, bytes);
  return file;
}

async function verify(file: string): Promise<{ code: number | null; report: Report; stderr: string }> {
  const result = await spawnCli(['archive', 'verify', file, '--json'], { timeoutMs: 60_000 });
  return { code: result.code, report: JSON.parse(result.stdout) as Report, stderr: result.stderr };
}

/** What `program -xf FILE -C DIR` wrote, as a list of paths, and its exit code. */
function extract(program: string, file: string): { code: number | null; paths: string[]; dir: string } {
  const dir = join(tempDir(), program);
  mkdirSync(dir);
  const run = spawnSync(program, ['-xf', file, '-C', dir], { env: C_UTF8 });
  const paths = execFileSync('find', ['.', '-mindepth', '1'], { cwd: dir, encoding: 'utf8' }).split('\n').filter(Boolean).sort();
  return { code: run.status, paths, dir };
}

describe('what the check reads is what GNU tar extracts: a refusal otherwise (exit 9, one line)', () => {
  let repo: RealRepository;
  beforeAll(() => {
    repo = realRepository(true);
  });

  for (const [what, build, reason] of readingHoles(() => repo)) {
    it(`${what}: exit 9, a problem matching ${reason}`, async () => {
      const { code, report, stderr } = await verify(writeArchive(build()));
      expect(code, JSON.stringify(report.problems)).toBe(9);
      // With --json, the error too is JSON: one message, of one line.
      expect((JSON.parse(stderr) as { error: { message: string } }).error.message).toMatch(/^[^\r\n]* failed verification: \d+ problems? \(first: [^\r\n]+\)$/);
      for (const problem of report.problems) expect(problem.message).not.toMatch(/[\r\n]/);
      const lines = report.problems.map((problem) => [problem.repository, problem.file, problem.message].filter(Boolean).join(': '));
      expect(lines.join('\n')).toMatch(reason);
    }, 60_000);
  }

  // What makes the cases above hostile: GNU tar reads something else than the members the
  // check reads today (the repository, through npm's tar inflating the stream inside).
  it('GNU tar finds no tar archive where the first inflated chunk is a single byte of a stream inside', () => {
    const file = writeArchive(slowStartGzip(gzipSync(tarOf(...metadata(), ...repositoryMembers(repo.files))), 1));
    const gnu = spawnSync('tar', ['-xf', file, '-C', tempDir()], { env: C_UTF8, encoding: 'utf8' });
    expect(gnu.status).toBe(2);
    expect(gnu.stderr).toMatch(/This does not look like a tar archive/);
  });

  it('GNU tar -xzf extracts the repository hidden in the FEXTRA field, with its config that runs a command', () => {
    const [, build] = readingHoles(() => repo).find(([what]) => what.includes('FEXTRA')) ?? [];
    const file = writeArchive((build as () => Buffer)());
    const dir = tempDir();
    execFileSync('tar', ['-xzf', file, '-C', dir], { env: C_UTF8, stdio: 'ignore' });
    expect(readFileSync(join(dir, 'repositories/acme/r.git/config'), 'utf8')).toMatch(/pager = touch/);
    expect(extract('tar', file).paths).not.toContain('./repositories/acme/r.git/packed-refs');
    // bsdtar inflates the stream inside, as the check's tar library did: the other repository.
    if (hasBsdtar) expect(extract('bsdtar', file).paths).toContain('./repositories/acme/r.git/packed-refs');
  });
});

describe('an archive packed again honestly, `tar czf x.tar.gz -C DIR .`, is read as GNU tar and bsdtar extract it', () => {
  it('verifies, with the repositories of the original', async () => {
    const original = await sandboxArchive(['Hello-World', 'widgets', 'docs.site']);
    const before = await verify(original);
    expect(before.code, JSON.stringify(before.report.problems)).toBe(0);
    const { dir } = extract('tar', original);
    const repacked = join(tempDir(), 'x.tar.gz');
    execFileSync('tar', ['czf', repacked, '-C', dir, '.'], { env: C_UTF8 });
    expect(execFileSync('tar', ['-tzf', repacked], { encoding: 'utf8' }).split('\n')).toContain('./schema.json');

    const after = await verify(repacked);
    expect(after.report.problems).toEqual([]);
    expect(after.code).toBe(0);
    expect(after.report.repositories).toEqual(before.report.repositories);
    expect(after.report.repositories.map((repository) => repository.name)).toEqual(['octo-org/Hello-World', 'octo-org/widgets', 'octo-org/docs.site']);
  }, 60_000);
});
