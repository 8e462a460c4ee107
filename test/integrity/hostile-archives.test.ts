import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip, deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { attackerSpellings, git, metadata, realRepository, repositoryMembers, secondReviewCases, thirdReviewCases } from '../helpers/hostile-archives.js';
import { untilInDirectory } from '../helpers/fs-events.js';
import { BIN, leftIn, runCli } from '../helpers/run-cli.js';
import { startStorageStub } from '../helpers/storage-stub.js';
import { member, paxHeader, tarGz } from '../helpers/tar-bytes.js';

// Archives built to turn the check against the owner: each names a way an archive (or whoever
// serves one) could make the check run a command, read objects from elsewhere, or spend memory,
// disk and time without bound. docs/reliability.md#the-archive-check says what stops each.

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-hostile-archive-'));
function writeArchive(bytes: Buffer): string {
  const file = join(tempDir(), 'a.tar.gz');
  writeFileSync(file, bytes);
  return file;
}

const verify = (file: string, extra: string[] = []) => runCli(['archive', 'verify', file, '--json', ...extra], { timeoutMs: 60_000 });
type Problem = { repository?: string; file?: string; message: string };
const problemsOf = (stdout: string) => (JSON.parse(stdout) as { problems: Problem[] }).problems;

describe('nothing inside an archive decides what runs', () => {
  let repo: ReturnType<typeof realRepository>;
  let marker: string;
  /** A config that runs a command whenever git reads an index. */
  let evilConfig: string;
  beforeAll(() => {
    repo = realRepository();
    marker = join(tempDir(), 'ran');
    evilConfig = `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch ${marker}; false"\n`;
  });

  const ways: [string, () => Buffer[]][] = [
    ['a config named with a "." segment', () => [member({ name: 'repositories/acme/r.git/./config' }, evilConfig)]],
    ['a config named with "//"', () => [member({ name: 'repositories/acme/r.git//config' }, evilConfig)]],
    [
      'a commondir naming a second repository with its own config',
      () => [
        member({ name: 'repositories/acme/r.git/commondir' }, '../1\n'),
        member({ name: 'repositories/acme/s.git/config' }, evilConfig),
        member({ name: 'repositories/acme/s.git/HEAD' }, 'ref: refs/heads/main\n'),
      ],
    ],
  ];

  for (const [way, extra] of ways) {
    it(`never runs the command of ${way} (with an index beside it): exit 9`, async () => {
      const index = member({ name: 'repositories/acme/r.git/index' }, repo.index);
      const archive = writeArchive(tarGz(...metadata(), ...repositoryMembers(repo.files), index, ...extra()));
      const result = await verify(archive);
      expect(existsSync(marker), 'the archive\'s command ran').toBe(false);
      expect(result.code, result.stderr).toBe(9);
      expect(problemsOf(result.stdout)).toContainEqual(expect.objectContaining({ file: 'repositories/acme/r.git/index', message: expect.stringMatching(/git index/) }));
    });
  }

  it('names the name that is not in normal form, and the file git would have followed', async () => {
    const [dot, slashes, commondir] = ways.map(([, extra]) => extra());
    const archive = writeArchive(tarGz(...metadata(), ...repositoryMembers(repo.files), ...dot!, ...slashes!, commondir![0]!));
    const problems = problemsOf((await verify(archive)).stdout);
    expect(problems).toEqual(
      expect.arrayContaining([
        { file: 'repositories/acme/r.git/./config', message: 'has a "." segment in its path (not in normal form)' },
        { file: 'repositories/acme/r.git//config', message: 'has an empty segment ("//") in its path (not in normal form)' },
        { repository: 'acme/r', file: 'repositories/acme/r.git/commondir', message: 'points git at another directory or configuration' },
      ]),
    );
  });

  it('never runs it in a plain download with default flags either', async () => {
    const archive = tarGz(...metadata(), ...repositoryMembers(repo.files), member({ name: 'repositories/acme/r.git/index' }, repo.index), ...ways[0]![1]());
    const { env } = await startStorageStub((_request, response) => {
      response.writeHead(200, { 'content-length': String(archive.length), etag: '"a"' }).end(archive);
    }, undefined, ['acme/r']);
    const output = join(tempDir(), 'out.tar.gz');
    const result = await runCli(['download', '7', '-o', output], { env });
    expect(existsSync(marker)).toBe(false);
    expect(result.code, result.stderr).toBe(9);
    expect(existsSync(output)).toBe(false);
  });

  it('an archive without the migration\'s repositories is not intact: export releases nothing', async () => {
    // Well formed, and empty: only the service's word says what it lacks.
    const archive = tarGz(member({ name: 'schema.json' }, '{"version":"1.2.0"}'));
    const releases: string[] = [];
    const { env } = await startStorageStub(
      (_request, response) => response.writeHead(200, { 'content-length': String(archive.length), etag: '"a"' }).end(archive),
      (request, response) => {
        if (request.method === 'POST') {
          // Exported just now by the program's clock, the machine's here (no sandbox).
          // eslint-disable-next-line no-restricted-syntax -- the service's "now", as the program under test reads it
          const now = new Date().toISOString();
          response.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 7, state: 'exported', guid: 'g', created_at: now, updated_at: now, repositories: [] }));
          return true;
        }
        if (request.method !== 'DELETE') return false;
        releases.push(request.url ?? '');
        response.writeHead(204).end();
        return true;
      },
      ['acme/r'],
    );
    const output = join(tempDir(), 'out.tar.gz');
    const result = await runCli(['export', 'r', '--lock', '--unlock', '--delete-archive', '--yes', '-o', output, '--interval', '0.1'], { env });
    expect(result.code, result.stderr).toBe(9);
    expect(result.stderr).toMatch(/acme\/r: belongs to migration 7 but is not in the archive's metadata/);
    expect(releases).toEqual([]);
    expect(existsSync(output)).toBe(false);
  });

  it('never borrows objects from outside the archive: alternates under any spelling are problems', async () => {
    const noObjects = repositoryMembers(repo.files, (rest) => rest === 'HEAD' || rest === 'packed-refs' || rest.startsWith('refs/'));
    for (const name of ['objects/info/alternates', './objects/info/alternates', 'objects//info/alternates']) {
      const archive = writeArchive(tarGz(...metadata(), ...noObjects, member({ name: `repositories/acme/r.git/${name}` }, `${repo.objects}\n`)));
      const result = await verify(archive);
      expect(result.code, `${name}: ${result.stdout}`).toBe(9);
      const report = JSON.parse(result.stdout) as { git_check: string };
      expect(report.git_check).toBe('failed');
    }
  });

  it('a GIT_* variable of the user\'s environment does not change what git checks', async () => {
    // Objects elsewhere, named by the environment: git would read them as if the archive held them.
    const noObjects = repositoryMembers(repo.files, (rest) => rest === 'HEAD' || rest === 'packed-refs' || rest.startsWith('refs/'));
    const archive = writeArchive(tarGz(...metadata(), ...noObjects));
    vi.stubEnv('GIT_OBJECT_DIRECTORY', repo.objects);
    vi.stubEnv('GIT_ALTERNATE_OBJECT_DIRECTORIES', repo.objects);
    try {
      const result = await verify(archive);
      expect(result.code, result.stdout).toBe(9);
      expect(problemsOf(result.stdout)).toContainEqual(expect.objectContaining({ repository: 'acme/r', message: expect.stringMatching(/git fsck found/) }));
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('every other spelling an attacker tried is a problem (exit 9)', () => {
  let repo: ReturnType<typeof realRepository>;
  beforeAll(() => {
    repo = realRepository();
  });
  const base = () => [...metadata(), ...repositoryMembers(repo.files)];
  const cases = attackerSpellings(() => repo);
  for (const [what, build, message] of cases) {
    it(what, async () => {
      const result = await verify(writeArchive(build()));
      expect(result.code, result.stdout + result.stderr).toBe(9);
      expect(problemsOf(result.stdout).map((problem) => problem.message).join('\n')).toMatch(message);
    });
  }

  it('a commit graph that lies is checked by git fsck, not read past', async () => {
    const dir = tempDir();
    git(['init', '-q', '--bare', 'g.git'], dir);
    for (const file of repo.files) {
      mkdirSync(join(dir, 'g.git', file.rest, '..'), { recursive: true });
      writeFileSync(join(dir, 'g.git', file.rest), file.data);
    }
    git(['--git-dir', join(dir, 'g.git'), 'commit-graph', 'write', '--reachable']);
    const graph = readFileSync(join(dir, 'g.git', 'objects', 'info', 'commit-graph'));
    graph[graph.length - 30] = (graph[graph.length - 30] as number) ^ 0xff;
    const result = await verify(writeArchive(tarGz(...base(), member({ name: 'repositories/acme/r.git/objects/info/commit-graph' }, graph))));
    expect(result.code, result.stdout).toBe(9);
    expect(problemsOf(result.stdout)).toEqual([expect.objectContaining({ repository: 'acme/r', message: expect.stringMatching(/git fsck found/) })]);
  });

  it('a line separator in a name is shown escaped, never printed as it is', async () => {
    const result = await runCli(['archive', 'verify', writeArchive(tarGz(...base(), member({ name: 'attachments/a\u2028b' }, 'x')))]);
    expect(result.code).toBe(9);
    expect(result.stdout).toContain('attachments/a\\u2028b');
    expect(result.stdout).not.toContain('\u2028');
  });
});

describe('what a second hostile review found', () => {
  let repo: ReturnType<typeof realRepository>;
  beforeAll(() => {
    repo = realRepository();
  });
  const base = () => [...metadata(), ...repositoryMembers(repo.files)];
  const cases = secondReviewCases(() => repo);
  for (const [what, build, message] of cases) {
    it(`${what} is a problem (exit 9)`, async () => {
      const result = await verify(writeArchive(build()));
      expect(result.code, result.stdout + result.stderr).toBe(9);
      expect(problemsOf(result.stdout).map((problem) => `${problem.file ?? ''}: ${problem.message}`).join('\n')).toMatch(message);
    });
  }

  it('a million problems are listed by the first thousand and a count, names cut short', async () => {
    const absolute = (i: number) => Buffer.concat([paxHeader([['path', `/abs/${'x'.repeat(600)}${i}`]]), member({ name: 'x' })]);
    const archive = writeArchive(tarGz(...base(), ...Array.from({ length: 3000 }, (_, i) => absolute(i))));
    const report = JSON.parse((await verify(archive)).stdout) as { problems: Problem[] };
    expect(report.problems).toHaveLength(1001);
    expect(report.problems.at(-1)).toEqual({ message: 'and 2000 more problems, not listed' });
    expect(report.problems[0]?.file).toMatch(/^\/abs\/x{507}… \(60\d characters\)$/);
  });

  it('counts the records of 50,000 repositories in proportion to their number, not its square', async () => {
    const records = Array.from({ length: 50_000 }, (_, i) => ({ repository: `https://h/o${i}/r` }));
    const archive = writeArchive(tarGz(member({ name: 'schema.json' }, '{}'), member({ name: 'issues_000001.json' }, JSON.stringify(records))));
    const result = await runCli(['archive', 'inspect', archive, '--json'], { timeoutMs: 30_000 });
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout) as { metadata: { records: number }[] }).metadata[1]?.records).toBe(50_000);
  }, 30_000);

  it('a metadata kind or owner named like an object\'s own property is counted as any other', async () => {
    const records = [{ repository: 'https://h/o/constructor' }, { repository: 'https://h/__proto__/r' }];
    const listed = JSON.stringify([{ full_name: 'o/constructor' }, { full_name: '__proto__/r' }]);
    const archive = writeArchive(tarGz(member({ name: 'repositories_000001.json' }, listed), member({ name: 'constructor_000001.json' }, JSON.stringify(records))));
    const result = await runCli(['archive', 'inspect', archive, '--json']);
    const report = JSON.parse(result.stdout) as { repositories: { name: string; counts: Record<string, number> }[] };
    expect(report.repositories).toEqual([
      expect.objectContaining({ name: 'o/constructor', counts: { constructor: 1 } }),
      expect.objectContaining({ name: '__proto__/r', counts: { constructor: 1 } }),
    ]);
  });

  it('a FIFO where the .sha256 would be does not hold the check', async () => {
    const archive = writeArchive(tarGz(...base()));
    execFileSync('mkfifo', [`${archive}.sha256`]);
    const result = await verify(archive);
    expect(result.code, result.stderr).toBe(0);
  });
});

describe('what the attacker of issue #42 found is a problem (exit 9)', () => {
  let repo: ReturnType<typeof realRepository>;
  beforeAll(() => {
    repo = realRepository();
  });
  for (const [what, build, message] of thirdReviewCases(() => repo)) {
    it(what, async () => {
      const result = await verify(writeArchive(build()));
      expect(result.code, result.stdout + result.stderr).toBe(9);
      expect(problemsOf(result.stdout).map((problem) => `${problem.file ?? ''}: ${problem.message}`).join('\n')).toMatch(message);
    });
  }

  it('a name with a character of no width is shown escaped', async () => {
    const result = await runCli(['archive', 'verify', writeArchive(tarGz(...metadata(), member({ name: 'attachments/a\u200cb' }, '1'), member({ name: 'attachments/ab' }, '2')))]);
    expect(result.code).toBe(9);
    expect(result.stdout).toContain('attachments/a\\u200cb');
  });
});

describe('what is verified is what GNU tar reads', () => {
  it('reads a GNU header\'s times as times, not as a name prefix', async () => {
    // Bytes 345–500 of a GNU header hold times and sparse data; read as a prefix they hid the name.
    const gnu = { magic: 'ustar  \0', at345: Buffer.concat([Buffer.from('hidden'), Buffer.alloc(6)]) };
    const archive = writeArchive(tarGz(...metadata(), member({ name: '/tmp/abs-evil.txt', ...gnu }, 'x')));
    const listed = execFileSync('tar', ['-tzf', archive], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    expect(listed.split('\n')).toContain('/tmp/abs-evil.txt');
    const result = await verify(archive);
    expect(result.code).toBe(9);
    expect(problemsOf(result.stdout)).toEqual([{ file: '/tmp/abs-evil.txt', message: 'has an absolute path' }]);
  });

  it('sees git data behind a GNU header as git data', async () => {
    const repo = realRepository();
    const gnu = { magic: 'ustar  \0', at345: 'zz' };
    const members = repo.files.filter((file) => file.rest !== 'config').map((file) =>
      member({ name: `repositories/acme/r.git/${file.rest}`, ...gnu }, file.rest.startsWith('objects/') ? Buffer.concat([file.data.subarray(0, 2), Buffer.from('broken')]) : file.data),
    );
    const archive = writeArchive(tarGz(...metadata(), ...members));
    const result = await verify(archive);
    expect(result.code).toBe(9);
    const report = JSON.parse(result.stdout) as { git_check: string; repositories: { name: string; git_data: boolean }[] };
    expect(report.repositories).toEqual([expect.objectContaining({ name: 'acme/r', git_data: true })]);
    expect(report.git_check).toBe('failed');
  });
});

/**
 * Makes a child report its peak resident memory on file descriptor 3 as it exits: /proc's VmHWM,
 * which only grows, read once at the end, so the whole run is measured rather than samples of it.
 * (Not getrusage's maxrss: Linux carries that across exec, so it counts the test process forked.)
 */
const REPORT_PEAK = [
  '--import',
  'data:text/javascript,import{readFileSync,writeSync}from"node:fs";process.on("exit",()=>writeSync(3,/VmHWM:\\s+(\\d+)/.exec(readFileSync("/proc/self/status","utf8"))[1]))',
];

/** Tar pieces gzipped into a file as they come (the end-of-archive marker added): large archives are never held whole. */
async function gzipped(pieces: Iterable<Buffer>): Promise<string> {
  const file = join(tempDir(), 'a.tar.gz');
  const withEnd = function* () {
    yield* pieces;
    yield Buffer.alloc(1024);
  };
  await pipeline(Readable.from(withEnd()), createGzip({ level: 1 }), createWriteStream(file));
  return file;
}

/** An archive whose one metadata file is `size` bytes of `[{},{},…]`: valid JSON, millions of records. */
function metadataBomb(size: number): Promise<string> {
  const records = Math.floor((size - 2) / 3);
  const body = Buffer.concat([Buffer.from('['), Buffer.from('{},'.repeat(records - 1)), Buffer.from('{}]')]);
  return gzipped([member({ name: 'schema.json' }, '{}'), member({ name: 'issues_000001.json' }, body)]);
}

interface Verified {
  code: number | null;
  stdout: string;
  peakMb: number;
}

/** `archive verify --json` by the built binary, and its peak memory; killed past `ceilingMs` (a hang). */
async function verifiedWithPeak(archive: string, extra: string[] = [], ceilingMs = 100_000): Promise<Verified> {
  const child = spawn(process.execPath, [...REPORT_PEAK, BIN, 'archive', 'verify', archive, '--json', ...extra], { stdio: ['ignore', 'pipe', 'ignore', 'pipe'] });
  const ceiling = setTimeout(() => child.kill('SIGKILL'), ceilingMs);
  let stdout = '';
  let peakKb = '';
  (child.stdio[1] as Readable).on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  (child.stdio[3] as Readable).on('data', (chunk: Buffer) => (peakKb += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(ceiling);
  return { code, stdout, peakMb: Number(peakKb) / 1024 };
}

/**
 * Under a steady load of objects that live a little while (tens of thousands of members, or names of
 * a MiB read and dropped), the V8 of Node 24 grows its young generation to 64 MB a semi-space: the
 * same live memory then peaks at 150 to 220 MB, however little the check keeps. The tests of such
 * loads hold the bound on Node 20 and 22.
 */
const YOUNG_GENERATION_BOUNDED = Number(process.versions.node.split('.')[0]) < 24;

describe('what an archive costs is bounded', () => {
  let bomb: string;
  beforeAll(async () => {
    bomb = await metadataBomb(60 << 20);
  });

  it('counts a 60 MB metadata file of empty objects in bounded memory (the built binary)', async () => {
    const { code, stdout, peakMb } = await verifiedWithPeak(bomb);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ ok: true, metadata_files: 2 });
    expect(peakMb).toBeLessThan(150);
  }, 120_000);

  it('names of 2,000 one-letter parts, each under a directory of its own, are kept in bounded memory: exit 9', async () => {
    // Each made 2,000 directories of the tree that finds clashes: 1,000 of them held 450 MB.
    const deep = `${'a/'.repeat(2030)}f`;
    const members = Array.from({ length: 1000 }, (_, i) => Buffer.concat([paxHeader([['path', `attachments/d${i}/${deep}`]]), member({ name: 'x' })]));
    const { code, stdout, peakMb } = await verifiedWithPeak(await gzipped(members));
    expect(code).toBe(9);
    expect(problemsOf(stdout).map((problem) => problem.message)).toContainEqual(expect.stringMatching(/^the archive holds more member names than a migration archive does/));
    if (YOUNG_GENERATION_BOUNDED) expect(peakMb).toBeLessThan(150);
  }, 120_000);

  it('repository names a URL makes 18,000 characters long are not kept (V8 hashes such strings by their length alone)', async () => {
    // Percent-encoded, each of these URLs' paths is nine times its length: 6,000 of them kept held
    // 200 MB, and their look-ups compared each with all the others for more than ten minutes.
    const long = '\u4e2d'.repeat(2030);
    const records = (field: string) => `[${Array.from({ length: 6000 }, (_, i) => JSON.stringify({ [field]: `https://h/${long}/r${i}` })).join(',')}]`;
    const archive = await gzipped([member({ name: 'repositories_000001.json' }, records('html_url')), member({ name: 'issues_000001.json' }, records('repository'))]);
    const { code, peakMb } = await verifiedWithPeak(archive);
    expect(code).toBe(0);
    expect(peakMb).toBeLessThan(150);
  }, 120_000);

  it('names of 1,300 parts, all in one chain of directories, are matched in proportion to their length, not its square', async () => {
    // Each part of each name joined the parts before it: 20,000 of these names took 150 s (3 s now; the ceiling only catches that).
    const chain = `attachments/${'\u00e9/'.repeat(1300)}`;
    const members = Array.from({ length: 20_000 }, (_, i) => Buffer.concat([paxHeader([['path', `${chain}f${i}`]]), member({ name: 'x' })]));
    const { code } = await verifiedWithPeak(await gzipped(members), [], 50_000);
    expect(code).toBe(0);
  }, 60_000);

  it('100,000 metadata files, each read on its own, in bounded memory (they took 216 MB, a token parser each)', async () => {
    const files = function* () {
      for (let i = 0; i < 100_000; i++) yield member({ name: `m${String(i).padStart(8, '0')}.json` }, '[]');
    };
    const { code, peakMb } = await verifiedWithPeak(await gzipped(files()));
    expect(code).toBe(0);
    if (YOUNG_GENERATION_BOUNDED) expect(peakMb).toBeLessThan(150);
  }, 120_000);

  it('GNU long names padded with a MiB of NULs do not keep their padding (300 of them held 394 MB)', async () => {
    const files = function* () {
      for (let i = 0; i < 300; i++) {
        yield member({ name: '././@LongLink', type: 'L', magic: 'ustar  \0' }, Buffer.concat([Buffer.from(`metadata_file_${i}.json`), Buffer.alloc((1 << 20) - 64)]));
        yield member({ name: 'x', magic: 'ustar  \0' }, '[]');
      }
    };
    const { code, peakMb } = await verifiedWithPeak(await gzipped(files()));
    expect(code).toBe(0);
    if (YOUNG_GENERATION_BOUNDED) expect(peakMb).toBeLessThan(150);
  }, 120_000);

  it('what git says past a MiB is not held: 17,000 refs to a missing commit make 18 MB of fsck errors (they took 149 MB, 168 on Node 24)', async () => {
    const refs = Array.from({ length: 17_000 }, (_, i) => `${'a'.repeat(40)} refs/heads/${'b'.repeat(1000)}${i}`).join('\n');
    const archive = await gzipped([...metadata(), member({ name: 'repositories/acme/r.git/HEAD' }, 'ref: refs/heads/main\n'), member({ name: 'repositories/acme/r.git/packed-refs' }, `${refs}\n`)]);
    const { code, stdout, peakMb } = await verifiedWithPeak(archive);
    expect(code).toBe(9);
    expect(problemsOf(stdout).map((problem) => problem.message)).toContainEqual(expect.stringMatching(/^git fsck found corrupt or missing objects: error: refs\/heads\/b+0: invalid sha1 pointer a{40}/));
    // A small archive's check stays near its start-up size (60 to 70 MB), whatever git says.
    expect(peakMb).toBeLessThan(120);
  }, 60_000);

  it('100,000 repositories listed without git data: 1,000 problems listed, then a count (all 100,000 were, 30 MB of --json)', async () => {
    const records = Array.from({ length: 100_000 }, (_, i) => ({ full_name: `owner-${i}/r` }));
    const archive = await gzipped([member({ name: 'repositories_000001.json' }, JSON.stringify(records)), member({ name: 'repositories/a/b.git/HEAD' }, 'ref: refs/heads/main\n')]);
    const { code, stdout } = await verifiedWithPeak(archive);
    expect(code).toBe(9);
    const problems = problemsOf(stdout);
    expect(problems).toHaveLength(1001);
    expect(problems.at(-1)).toEqual({ message: 'and 99000 more problems, not listed' });
  }, 60_000);

  it('more than 10,000 packs and pack indexes are a problem, not kept to be paired (250,000 empty indexes took 210 MB)', async () => {
    const indexes = function* () {
      yield member({ name: 'repositories/acme/r.git/HEAD' }, 'ref: refs/heads/main\n');
      // Each starts as an index does, so none is a problem of its own before the bound.
      const start = Buffer.from([0xff, 0x74, 0x4f, 0x63, 0, 0, 0, 2]);
      for (let i = 0; i < 10_001; i++) yield member({ name: `repositories/acme/r.git/objects/pack/pack-${i.toString(16).padStart(40, '0')}.idx` }, start);
    };
    const { code, stdout } = await verifiedWithPeak(await gzipped(indexes()));
    expect(code).toBe(9);
    expect(problemsOf(stdout).map((problem) => problem.message)).toContain('the archive holds more than 10000 packs and pack indexes; the rest were not checked');
  }, 60_000);

  it('100,000 refs of 1,000 characters in one packed-refs are kept in bounded memory (they held 200 MB)', async () => {
    const refs = Array.from({ length: 100_000 }, (_, i) => `${'a'.repeat(40)} refs/heads/${'r'.repeat(1010)}${i}`).join('\n');
    const archive = await gzipped([
      member({ name: 'repositories/acme/r.git/HEAD' }, 'ref: refs/heads/main\n'),
      member({ name: 'repositories/acme/r.git/packed-refs' }, `# pack-refs with: peeled fully-peeled sorted\n${refs}\n`),
    ]);
    const { code, peakMb } = await verifiedWithPeak(archive, ['--no-git-check']);
    expect(code).toBe(0);
    expect(peakMb).toBeLessThan(150);
  }, 120_000);

  it('SIGTERM ends a check under way, its temporary files removed (the test timeout only catches a hang)', async () => {
    const scratch = tempDir();
    const child = spawn(process.execPath, [BIN, 'archive', 'verify', bomb, '--json'], { env: { ...process.env, TMPDIR: scratch }, stdio: ['ignore', 'pipe', 'ignore'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    // Its temporary directory is there: the check is under way (the bomb takes seconds to count).
    await untilInDirectory(scratch, () => leftIn(scratch).length > 0);
    child.kill('SIGTERM');
    expect(await exited).toBe(143);
    // Stopped, not finished: no verdict was printed.
    expect(output).toBe('');
    expect(leftIn(scratch)).toEqual([]);
  }, 60_000);
});

/** A small tmpfs for TMPDIR (root only; skipped otherwise, saying why). */
function mountSmallDisk(megabytes: number): string | undefined {
  const dir = tempDir();
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m`, 'tmpfs', dir], { stdio: 'ignore' });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
}

const smallDisk = mountSmallDisk(64);

describe.skipIf(!smallDisk)(`the git data copied for the check never fills the disk${smallDisk ? '' : ' (skipped: cannot mount a tmpfs here; needs root)'}`, () => {
  const disk = smallDisk as string;
  afterAll(() => {
    execFileSync('umount', [disk]);
    rmSync(disk, { recursive: true, force: true });
  });

  /** An archive whose one pack is `size` bytes: `head`, then zeros. */
  async function packArchive(size: number, head: Buffer): Promise<string> {
    const repo = realRepository();
    const refs = repositoryMembers(repo.files, (rest) => rest === 'HEAD' || rest.startsWith('refs/'));
    const file = join(tempDir(), 'pack.tar.gz');
    const gzip = createGzip({ level: 1 });
    const out: Buffer[] = [];
    gzip.on('data', (chunk: Buffer) => out.push(chunk));
    const done = new Promise((resolve) => gzip.on('end', resolve));
    gzip.write(Buffer.concat([...metadata(), ...refs]));
    gzip.write(member({ name: `repositories/acme/r.git/objects/pack/pack-${'a'.repeat(40)}.pack`, size }).subarray(0, 512));
    gzip.write(head);
    const zeros = Buffer.alloc(1 << 20);
    for (let left = size - head.length; left > 0; left -= zeros.length) gzip.write(zeros.subarray(0, Math.min(left, zeros.length)));
    gzip.end(Buffer.alloc(1024 + ((512 - (size % 512)) % 512)));
    await done;
    writeFileSync(file, Buffer.concat(out));
    return file;
  }

  it('a 256 MiB pack of zeros is not a pack: a problem, and nothing of it written', async () => {
    const archive = await packArchive(256 << 20, Buffer.alloc(0));
    vi.stubEnv('TMPDIR', disk);
    const result = await verify(archive).finally(() => vi.unstubAllEnvs());
    expect(result.code, result.stderr).toBe(9);
    expect(problemsOf(result.stdout)).toContainEqual(expect.objectContaining({ message: 'is not a git pack (it does not start with "PACK")' }));
    expect(readdirSync(disk)).toEqual([]);
  }, 60_000);

  it('a pack larger than the room left stops the check before it is written: exit 2 naming TMPDIR', async () => {
    const archive = await packArchive(256 << 20, Buffer.from('PACK\0\0\0\x02\0\0\0\x01', 'latin1'));
    vi.stubEnv('TMPDIR', disk);
    const result = await runCli(['archive', 'verify', archive], { timeoutMs: 60_000 }).finally(() => vi.unstubAllEnvs());
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(new RegExp(`error: not enough free space in ${disk}/svc-migrate-verify-[\\w-]+ to check the archive's git objects`));
    expect(result.stderr).toMatch(/hint: set TMPDIR to a directory with more room/);
    expect(readdirSync(disk)).toEqual([]);
  }, 60_000);

  it('many small objects are counted by the blocks they take, not by their bytes', async () => {
    // 20,000 loose objects of a few bytes each: 80 MB of blocks on a 64 MB disk.
    const objects = Array.from({ length: 20_000 }, (_, i) => {
      const name = createHash('sha1').update(String(i)).digest('hex');
      return member({ name: `repositories/acme/r.git/objects/${name.slice(0, 2)}/${name.slice(2)}` }, deflateSync(Buffer.from(`blob 1\0${i % 10}`)));
    });
    const archive = writeArchive(tarGz(...metadata(), member({ name: 'repositories/acme/r.git/HEAD' }, 'ref: refs/heads/main\n'), ...objects));
    vi.stubEnv('TMPDIR', disk);
    const result = await runCli(['archive', 'verify', archive], { timeoutMs: 60_000 }).finally(() => vi.unstubAllEnvs());
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/not enough free space in .* to check the archive's git objects/);
    expect(readdirSync(disk)).toEqual([]);
  }, 60_000);

  it('an archive that fits is checked as usual', async () => {
    const repo = realRepository();
    const archive = writeArchive(tarGz(...metadata(), ...repositoryMembers(repo.files)));
    mkdirSync(join(disk, 'sub'), { recursive: true });
    vi.stubEnv('TMPDIR', join(disk, 'sub'));
    const result = await verify(archive).finally(() => vi.unstubAllEnvs());
    expect(result.code, result.stdout).toBe(0);
  });
});
