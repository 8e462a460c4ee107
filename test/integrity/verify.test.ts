import { createHash, randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip, deflateSync, gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { describe, expect, it, vi } from 'vitest';
import type { Migration } from '../../src/api/types.js';
import { Parser, type ReadEntry } from 'tar';
import { TarWriter } from '../../src/sandbox/tar.js';
import { BIN, leftIn, runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';

// `archive verify` on archives the sandbox made, then tampered with one way each; and the job
// (download, export) refusing to go on with an archive that fails.

const FAST = ['--interval', '0.1'];
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-verify-'));

interface Member {
  name: string;
  type: 'file' | 'directory' | 'symlink';
  data: Buffer;
  link?: string;
}

/** A real archive of the sandbox: three repositories, the first and third packed, the second loose. */
async function sandboxArchive() {
  const box = await testSandbox({ exportSeconds: 0.2 });
  const output = join(tempDir(), 'good.tar.gz');
  const result = await runCli(['export', 'widgets', 'Hello-World', 'docs.site', '-o', output, '--json', ...FAST], { env: box.env });
  expect(result.code, result.stderr).toBe(0);
  const { migration } = JSON.parse(result.stdout) as { migration: Migration };
  return { ...box, output, id: migration.id };
}

let shared: Promise<string> | undefined;
/** One sandbox archive for the tests that only read it (each tampers with a copy of its own). */
const goodArchive = () => (shared ??= sandboxArchive().then(({ output }) => output));

/** The members of an archive as npm's tar reads them (the test's own reading, not the check's). */
function readMembers(file: string): Member[] {
  const members: Member[] = [];
  const parser = new Parser({ strict: true });
  parser.on('entry', (entry: ReadEntry) => {
    const chunks: Buffer[] = [];
    const type = entry.type === 'Directory' ? 'directory' : entry.type === 'SymbolicLink' ? 'symlink' : 'file';
    entry.on('data', (chunk: Buffer) => chunks.push(Buffer.from(chunk)));
    entry.on('end', () => members.push({ name: entry.path, type, data: Buffer.concat(chunks), ...(entry.linkpath ? { link: entry.linkpath } : {}) }));
  });
  parser.end(gunzipSync(readFileSync(file)));
  return members;
}

async function writeArchive(members: Member[], file: string): Promise<string> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  const tar = new TarWriter(out, Date.parse('2024-01-01T00:00:00Z'));
  for (const member of members) {
    if (member.type === 'directory') await tar.directory(member.name);
    else if (member.type === 'symlink') await tar.symlink(member.name, member.link ?? '');
    else await tar.file(member.name, member.data);
  }
  await tar.end();
  out.end();
  writeFileSync(file, gzipSync(Buffer.concat(chunks)));
  return file;
}

const verify = (file: string, extra: string[] = [], env: Record<string, string> = {}) =>
  runCli(['archive', 'verify', file, '--json', ...extra], { env, timeoutMs: 60_000 });

describe('archive verify', () => {
  it('passes the sandbox\'s archive, reading packed and loose git objects with git fsck', async () => {
    const output = await goodArchive();
    const result = await verify(output);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({ ok: true, git_check: 'passed', problems: [] });
    expect(report.repositories).toEqual([
      { name: 'octo-org/widgets', git_data: true, objects: 'pack', git_check: 'passed' },
      { name: 'octo-org/Hello-World', git_data: true, objects: 'loose', git_check: 'passed' },
      { name: 'octo-org/docs.site', git_data: true, objects: 'pack', git_check: 'passed' },
    ]);
    // The .sha256 the download wrote beside it was checked too.
    expect(report.sha256.expected).toBe(createHash('sha256').update(readFileSync(output)).digest('hex'));
  });

  it('fails a truncated archive with exit 9', async () => {
    const output = await goodArchive();
    const bytes = readFileSync(output);
    const cut = join(tempDir(), 'cut.tar.gz');
    writeFileSync(cut, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const result = await verify(cut);
    expect(result.code).toBe(9);
    expect(JSON.parse(result.stdout).problems).toEqual([{ message: 'the gzip stream ends early: the archive is truncated' }]);
    expect(JSON.parse(result.stderr.trim().split('\n').pop() ?? '{}').error.code).toBe(9);
  });

  it('names the repository whose loose git object was altered', async () => {
    const output = await goodArchive();
    const members = readMembers(output);
    const blob = members.find((m) => /^repositories\/octo-org\/Hello-World\.git\/objects\/[0-9a-f]{2}\//.test(m.name) && inflateSync(m.data).toString().startsWith('blob'))!;
    // Same name, different content: only a check of content against name can see it.
    blob.data = deflateSync(Buffer.from(inflateSync(blob.data).toString().replace('Hello-World', 'Hello-Wörld')));
    const tampered = await writeArchive(members, join(tempDir(), 'altered.tar.gz'));
    const result = await verify(tampered);
    expect(result.code).toBe(9);
    const report = JSON.parse(result.stdout);
    expect(report.git_check).toBe('failed');
    expect(report.problems).toEqual([
      expect.objectContaining({ repository: 'octo-org/Hello-World', file: 'repositories/octo-org/Hello-World.git', message: expect.stringMatching(/git fsck found corrupt/) }),
    ]);
  });

  it('names the repository whose pack was altered', async () => {
    const output = await goodArchive();
    const members = readMembers(output);
    const packFile = members.find((m) => m.name.startsWith('repositories/octo-org/docs.site.git/objects/pack/') && m.name.endsWith('.pack'))!;
    packFile.data[40] = (packFile.data[40] as number) ^ 0xff;
    const result = await verify(await writeArchive(members, join(tempDir(), 'pack.tar.gz')));
    expect(result.code).toBe(9);
    expect(JSON.parse(result.stdout).problems).toEqual([expect.objectContaining({ repository: 'octo-org/docs.site' })]);
  });

  it('fails when a repository listed in the metadata has no git data', async () => {
    const output = await goodArchive();
    const members = readMembers(output).filter((m) => !m.name.startsWith('repositories/octo-org/widgets.git'));
    const result = await verify(await writeArchive(members, join(tempDir(), 'missing.tar.gz')));
    expect(result.code).toBe(9);
    expect(JSON.parse(result.stdout).problems).toEqual([
      { repository: 'octo-org/widgets', file: 'repositories/octo-org/widgets.git', message: 'is listed in the metadata but its git data is missing' },
    ]);
  });

  it('fails members escaping with .. or an absolute path, and any symbolic link', async () => {
    const output = await goodArchive();
    const members = readMembers(output);
    members.push(
      { name: 'attachments/../../evil.sh', type: 'file', data: Buffer.from('#!/bin/sh\n') },
      { name: 'attachments/passwd', type: 'symlink', data: Buffer.alloc(0), link: '../../etc/passwd' },
      { name: 'attachments/abs', type: 'symlink', data: Buffer.alloc(0), link: '/etc/shadow' },
      { name: 'attachments/fine', type: 'symlink', data: Buffer.alloc(0), link: '../schema.json' },
    );
    const result = await verify(await writeArchive(members, join(tempDir(), 'escape.tar.gz')));
    expect(result.code).toBe(9);
    expect(JSON.parse(result.stdout).problems).toEqual([
      { file: 'attachments/../../evil.sh', message: 'has a path with ".." that leads outside the archive' },
      // Wherever they point: an importer would write later members through them.
      ...['passwd', 'abs', 'fine'].map((name) => ({
        file: `attachments/${name}`,
        message: 'is a symbolic link, which a migration archive never holds (an importer would write through it)',
      })),
    ]);
  });

  it('names members that clash (a file where a directory must be) instead of failing as a bug', async () => {
    const output = await goodArchive();
    const members = readMembers(output).map((m) =>
      m.name === 'repositories/octo-org/widgets.git/objects/' ? { ...m, name: 'repositories/octo-org/widgets.git/objects', type: 'file' as const } : m,
    );
    const result = await verify(await writeArchive(members, join(tempDir(), 'clash.tar.gz')));
    expect(result.code, result.stderr).toBe(9);
    expect(JSON.parse(result.stdout).problems).toContainEqual(
      expect.objectContaining({ repository: 'octo-org/widgets', message: expect.stringMatching(/a file where git data must be a directory/) }),
    );
  });

  it('fails metadata that does not parse, and a human report names it', async () => {
    const output = await goodArchive();
    const members = readMembers(output);
    members.find((m) => m.name === 'issues_000001.json')!.data = Buffer.from('[{"title": "cut here');
    const file = await writeArchive(members, join(tempDir(), 'json.tar.gz'));
    const result = await runCli(['archive', 'verify', file]);
    expect(result.code).toBe(9);
    expect(result.stdout).toMatch(/failed verification: 1 problem\n {2}- issues_000001\.json: is not valid JSON/);
    expect(result.stderr).toMatch(/^error: .*failed verification/m);
  });

  // In-process, git is looked up on the test process's PATH.
  it('says plainly that the git check was skipped when git is not on PATH', async () => {
    const output = await goodArchive();
    vi.stubEnv('PATH', '/nonexistent');
    try {
      const result = await runCli(['archive', 'verify', output, '--json']);
      expect(result.code, result.stderr).toBe(0);
      const report = JSON.parse(result.stdout);
      expect(report.git_check).toBe('skipped: git is not on PATH');
      expect(report.notes.join(' ')).toMatch(/git objects were NOT checked/);
      const human = await runCli(['archive', 'verify', output]);
      expect(human.stdout).toMatch(/git objects NOT checked \(git is not on PATH\)/);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  // `env -i`, a bare service unit: execvp then searches /bin:/usr/bin, and so does the check.
  it.skipIf(!['/bin/git', '/usr/bin/git'].some((path) => existsSync(path)))('checks the git objects with PATH not set at all, as execvp finds git (skipped: no git in /bin or /usr/bin)', async () => {
    const output = await goodArchive();
    vi.stubEnv('PATH', undefined);
    try {
      const result = await runCli(['archive', 'verify', output, '--json']);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout).git_check).toBe('passed');
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('with --migration, fails when a repository of the migration is not in the archive', async () => {
    const { output, env, id } = await sandboxArchive();
    expect((await verify(output, ['--migration', String(id)], env)).code).toBe(0);
    const members = readMembers(output)
      .filter((m) => !m.name.startsWith('repositories/octo-org/docs.site.git'))
      .map((m) => {
        if (m.name !== 'repositories_000001.json') return m;
        const listed = JSON.parse(m.data.toString()) as { full_name: string }[];
        return { ...m, data: Buffer.from(JSON.stringify(listed.filter((r) => r.full_name !== 'octo-org/docs.site'))) };
      });
    const file = await writeArchive(members, join(tempDir(), 'short.tar.gz'));
    expect((await verify(file)).code).toBe(0);
    const result = await verify(file, ['--migration', String(id)], env);
    expect(result.code).toBe(9);
    expect(JSON.parse(result.stdout).problems).toEqual([
      { repository: 'octo-org/docs.site', message: `belongs to migration ${id} but is not in the archive's metadata` },
      { repository: 'octo-org/docs.site', file: 'repositories/octo-org/docs.site.git', message: `belongs to migration ${id} but its git data is missing` },
    ]);
  });

  it('stops on Ctrl-C with exit 130 and leaves no temporary extraction behind', async () => {
    // The sandbox's archive with 128 MiB of stored padding after it: far more than is read before the signal lands.
    const output = join(tempDir(), 'big.tar.gz');
    const tarStream = new PassThrough();
    const written = pipeline(tarStream, createGzip({ level: 0 }), createWriteStream(output));
    const tar = new TarWriter(tarStream, Date.parse('2024-01-01T00:00:00Z'));
    for (const member of readMembers(await goodArchive())) {
      if (member.type === 'directory') await tar.directory(member.name);
      else await tar.file(member.name, member.data);
    }
    await tar.repeated('padding.bin', 128 * 1024 * 1024, randomBytes(1 << 20));
    await tar.end();
    tarStream.end();
    await written;
    const scratch = tempDir();
    const child = spawn(process.execPath, [BIN, 'archive', 'verify', output], { env: { ...process.env, TMPDIR: scratch } });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    // The extraction directory appears before the first byte is read: interrupt once it is there.
    // Node 22 and later make their compile cache there too, before the program has a Ctrl-C handler.
    while (leftIn(scratch).length === 0) await new Promise((resolve) => setImmediate(resolve));
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(leftIn(scratch)).toEqual([]);
  }, 120_000);

  it('says which file is missing (exit 2)', async () => {
    const result = await runCli(['archive', 'verify', join(tempDir(), 'nope.tar.gz')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/nope\.tar\.gz does not exist/);
  });
});

describe('archive inspect', () => {
  it('lists the organization, repositories with refs and size, and metadata counts', async () => {
    const output = await goodArchive();
    const result = await runCli(['archive', 'inspect', output, '--json']);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.organizations).toEqual(['octo-org']);
    expect(report.repositories.map((r: { name: string }) => r.name)).toEqual(['octo-org/widgets', 'octo-org/Hello-World', 'octo-org/docs.site']);
    const widgets = report.repositories[0];
    expect(Object.keys(widgets.refs)).toEqual(['refs/heads/main', 'refs/tags/v1.0.0']);
    expect(widgets.git_bytes).toBeGreaterThan(0);
    // Protected branches name theirs by `repository_url`, as GitHub's archives do: not counted per repository.
    expect(widgets.counts).toEqual({
      issues: 3, issue_comments: 7, issue_events: 25, pull_requests: 3, pull_request_reviews: 4, pull_request_review_threads: 3,
      pull_request_review_comments: 5, milestones: 2, releases: 2,
    });
    const table = await runCli(['archive', 'inspect', output], { terminal: { columns: 200 } });
    expect(table.stdout).toMatch(/octo-org\/Hello-World/);
    expect(table.stdout).toMatch(/PULL REQUESTS/);
    // In a pipe, as every table: one tab-separated line per repository, no header, no borders.
    const piped = await runCli(['archive', 'inspect', output]);
    expect(piped.stdout).not.toMatch(/[│┌─]|PULL REQUESTS/);
    const rows = piped.stdout.split('\n').filter((line) => line.includes('\t'));
    expect(rows.map((row) => row.split('\t').slice(0, 2))).toEqual([
      ['octo-org/widgets', 'main,tag:v1.0.0'],
      ['octo-org/Hello-World', expect.any(String)],
      ['octo-org/docs.site', expect.any(String)],
    ]);
  });
});

describe('verification is part of the job', () => {
  it('download writes <archive>.sha256 in sha256sum format and reports the check', async () => {
    const output = await goodArchive();
    const digest = createHash('sha256').update(readFileSync(output)).digest('hex');
    expect(readFileSync(`${output}.sha256`, 'utf8')).toBe(`${digest}  good.tar.gz\n`);
  });

  it('download of a corrupted archive exits 9, keeps the bytes in .part and nothing under the final name', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 0.2 });
    const started = await runCli(['start', 'widgets', 'Hello-World', '--wait', '--json', ...FAST], { env });
    const { id } = JSON.parse(started.stdout) as Migration;
    sandbox.faults.set({ corruptArchive: true });
    const output = join(tempDir(), 'a.tar.gz');
    const result = await runCli(['download', String(id), '-o', output], { env });
    expect(result.code).toBe(9);
    expect(result.stderr).toMatch(/a\.tar\.gz\.part failed verification/);
    expect(existsSync(output)).toBe(false);
    expect(existsSync(`${output}.sha256`)).toBe(false);
    expect(existsSync(`${output}.part`)).toBe(true);
    // The next run fetches it anew instead of resuming corrupt bytes.
    sandbox.faults.clear();
    const again = await runCli(['download', String(id), '-o', output], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(sandbox.requests.filter((r) => r.origin === 'storage').every((r) => r.headers.range === undefined)).toBe(true);
  });

  it('--no-verify skips the check and says the archive was not verified', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 0.2 });
    const started = await runCli(['start', 'widgets', '--wait', '--json', ...FAST], { env });
    const { id } = JSON.parse(started.stdout) as Migration;
    sandbox.faults.set({ corruptArchive: true });
    const output = join(tempDir(), 'a.tar.gz');
    const result = await runCli(['download', String(id), '-o', output, '--no-verify', '--json'], { env });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).verified).toBe(false);
    expect(result.stderr).toMatch(/was NOT verified/);
  });

  it('a resume answered from a different file starts over, and the archive still verifies', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 0.2, archivePadBytes: 512 * 1024 });
    const started = await runCli(['start', 'widgets', '--wait', '--json', ...FAST], { env });
    const { id } = JSON.parse(started.stdout) as Migration;
    sandbox.faults.set({ cutAtOffsets: [200_000], spliceNext: 1 });
    const output = join(tempDir(), 'a.tar.gz');
    const result = await runCli(['download', String(id), '-o', output, '--json'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/changed while resuming/);
    expect(JSON.parse(result.stdout).verified).toBe(true);
  });

  it('export --unlock --delete-archive sends no unlock and no DELETE after a failed verification', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 0.2 });
    sandbox.faults.set({ corruptArchive: true });
    const output = join(tempDir(), 'a.tar.gz');
    const result = await runCli(['export', 'widgets', 'docs.site', '--lock', '--unlock', '--delete-archive', '--yes', '-o', output, ...FAST], { env });
    expect(result.code).toBe(9);
    expect(result.stderr).toMatch(/failed verification/);
    expect(result.stderr).toMatch(/the service keeps its copy: nothing was unlocked or deleted/);
    expect(sandbox.requests.filter((r) => r.method === 'DELETE')).toEqual([]);
    const migration = sandbox.store.find(sandbox.store.organization('octo-org')!, Number(/migration (\d+)/.exec(result.stderr)?.[1]))!;
    expect([...migration.locked].sort()).toEqual(['docs.site', 'widgets']);
    expect(migration.archiveDeletedAt).toBeUndefined();
    expect(existsSync(output)).toBe(false);
  });

  it('export keeps the service\'s archive when git is missing: its objects were not checked', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 0.2 });
    const output = join(tempDir(), 'a.tar.gz');
    // In-process, git is looked up on the test process's PATH.
    vi.stubEnv('PATH', '/nonexistent');
    const result = await runCli(['export', 'widgets', '--lock', '--unlock', '--delete-archive', '--yes', '-o', output, ...FAST], { env }).finally(() => vi.unstubAllEnvs());
    expect(result.code, result.stderr).toBe(9);
    expect(result.stderr).toMatch(/were not checked \(git is not on PATH\), so the service's copy of migration \d+ was kept/);
    expect(result.stderr).toMatch(/hint: .*install git/);
    expect(sandbox.requests.filter((r) => r.method === 'DELETE' && r.url.endsWith('/archive'))).toEqual([]);
    expect(existsSync(output)).toBe(true);
  });

  it('export refuses --unlock or --delete-archive with --no-verify or -o -', async () => {
    const { env } = await testSandbox();
    const noVerify = await runCli(['export', 'widgets', '--unlock', '--no-verify', ...FAST], { env });
    expect(noVerify.code).toBe(2);
    expect(noVerify.stderr).toMatch(/--unlock needs a verified archive: drop --no-verify/);
    const toStdout = await runCli(['export', 'widgets', '--unlock', '-o', '-', ...FAST], { env });
    expect(toStdout.code).toBe(2);
  });
});
