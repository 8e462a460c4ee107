import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { deflateSync, gzipSync } from 'node:zlib';
import { polyglotGzip, slowStartGzip } from './gzip-bytes.js';
import { headerBlock, member, paxHeader, tarGz, tarOf } from './tar-bytes.js';

// The hostile archives of test/integrity/hostile-archives.test.ts, shared with the extractor
// differential (test/integrity/extractor-differential.test.ts), which holds each to GNU tar and
// bsdtar: every one must be refused, or extracted exactly as it was read.

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-hostile-archive-'));
export const git = (args: string[], cwd?: string) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@e', '-c', 'init.defaultBranch=main', ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: cwd ?? tmpdir(), GIT_CONFIG_NOSYSTEM: '1' },
  });

export interface RepoFile {
  rest: string;
  data: Buffer;
}

export interface RealRepository {
  files: RepoFile[];
  index: Buffer;
  objects: string;
}

/**
 * A real bare repository of one commit, its files as an archive holds them, and a working tree's
 * index; its objects loose, or in one pack with its index when `packed`.
 */
/** Every file of a bare repository, by its path inside it. */
export function filesOf(bare: string): RepoFile[] {
  const files: RepoFile[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else files.push({ rest: relative(bare, path), data: readFileSync(path) });
    }
  };
  walk(bare);
  return files;
}

export function realRepository(packed = false): RealRepository {
  const dir = tempDir();
  git(['init', '-q', 'work'], dir);
  writeFileSync(join(dir, 'work', 'README.md'), '# r\n');
  git(['add', 'README.md'], join(dir, 'work'));
  git(['commit', '-q', '-m', 'first'], join(dir, 'work'));
  git(['clone', '-q', '--bare', 'work', 'r.git'], dir);
  const bare = join(dir, 'r.git');
  if (packed) git(['repack', '-a', '-d', '-q'], bare);
  return { files: filesOf(bare), index: readFileSync(join(dir, 'work', '.git', 'index')), objects: join(bare, 'objects') };
}

/** The repository's files under `repositories/acme/r.git/` (config left out unless `keep` says so). */
export function repositoryMembers(files: RepoFile[], keep = (rest: string) => rest !== 'config' && !rest.startsWith('hooks/')): Buffer[] {
  return files.filter((file) => keep(file.rest)).map((file) => member({ name: `repositories/acme/r.git/${file.rest}` }, file.data));
}

export const metadata = () => [
  member({ name: 'schema.json' }, '{"version":"1.2.0"}'),
  member({ name: 'repositories_000001.json' }, JSON.stringify([{ full_name: 'acme/r' }])),
];

/** The header of `member` with `mtime` moved until its unsigned sum is a multiple of 8. */
function headerWithSumDivisibleBy8(name: string, size: number): Buffer {
  for (let mtime = 1_700_000_000; ; mtime++) {
    let found: Buffer | undefined;
    const block = headerBlock({
      name,
      size,
      patch: [[136, `${mtime.toString(8).padStart(11, '0')}\0`]],
      // Eight digits and no terminator: GNU tar reads them; the library reads on into the type flag.
      checksumField: (sum) => (sum % 8 === 0 ? (found = Buffer.alloc(0), (sum / 8).toString(8).padStart(8, '0')) : '00000000'),
    });
    if (found) return block;
  }
}

/** A hostile archive: what it tries, how it is made, and what the check's problem says of it. */
export type HostileCase = [string, () => Buffer, RegExp];

/** Spellings an attacker tried to slip past the check; `repo` is read only when an archive is made. */
export function attackerSpellings(repo: () => RealRepository): HostileCase[] {
  const base = () => [...metadata(), ...repositoryMembers(repo().files)];
  const fakeZero = () => {
    const block = Buffer.alloc(512);
    block.write('\0       ', 148, 'latin1');
    return block;
  };
  const nameCutBy = (separator: string) => {
    const name = 'repositories_000001.json';
    return member({ name, patch: [[name.length + 1, `${separator}xx`]] }, '[]');
  };
  return [
    ['a name whose field goes on after its NUL (a line separator there)', () => tarGz(...base(), nameCutBy('\u2028')), /name field holds more after its end/],
    ['a checksum of eight digits, which the library reads into the type flag', () => tarGz(...base(), headerWithSumDivisibleBy8('notes.txt', 0)), /checksum is not written plainly/],
    ['a zero block whose checksum field is blank, then more members', () => tarGz(...base(), fakeZero(), member({ name: 'after.json' }, '[]')), /checksum/],
    ['an archive compressed twice', () => gzipSync(tarGz(...base())), /compressed stream inside/],
    ['a zstd stream inside', () => gzipSync(Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), Buffer.alloc(2044)])), /tar structure/],
    ['a symbolic link into the git data, written through', () => tarGz(...base(), member({ name: 'x', type: '2', linkName: 'repositories/acme/r.git/objects' }), member({ name: 'x/info/alternates' }, '/tmp\n')), /symbolic link/],
    ['a .git directory inside a repository', () => tarGz(...base(), member({ name: 'repositories/acme/r.git/.git/config' }, '[core]\n')), /"\.git" segment/],
    ['a file where a repository\'s directory must be', () => tarGz(...base(), member({ name: 'repositories/acme/s.git' }, 'gitdir: /tmp\n')), /must be a directory/],
    ['a directory named like a metadata file', () => tarGz(...base(), member({ name: 'issues_000001.json/', type: '5' })), /directory where a metadata file belongs/],
    ['an empty GNU long name', () => tarGz(...base(), member({ name: '././@LongLink', type: 'L', magic: 'ustar  \0' }), member({ name: 'a.json' }, '[]')), /empty GNU long name/],
    ['a set-user-ID file', () => tarGz(...base(), member({ name: 'attachments/run', patch: [[100, '0004755\0']] }, '#!/bin/sh\n')), /set-user-ID/],
    ['data after the end-of-archive marker', () => gzipSync(Buffer.concat([tarOf(...base()), member({ name: 'late.json' }, '[]')])), /data after the end-of-archive marker/],
    ['a config that runs a command', () => tarGz(...base(), member({ name: 'repositories/acme/r.git/config' }, '[core]\n\tbare = true\n\tpager = touch /tmp/x\n')), /sets core\.pager/],
    ['a config naming SHA-256 objects past a comment, for SHA-1 data', () => tarGz(...base(), member({ name: 'repositories/acme/r.git/config' }, '[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256 ; said plainly\n')), /git fsck found/],
    ['a promisor pack', () => tarGz(...base(), member({ name: `repositories/acme/r.git/objects/pack/pack-${'a'.repeat(40)}.promisor` })), /fetched on demand/],
  ];
}

/** What a second hostile review found. */
export function secondReviewCases(repo: () => RealRepository): HostileCase[] {
  const base = () => [...metadata(), ...repositoryMembers(repo().files)];
  const refsOnly = () => repositoryMembers(repo().files, (rest) => rest === 'HEAD' || rest === 'packed-refs' || rest.startsWith('refs/'));

  return [
    ['a pack without its index', () => tarGz(...metadata(), ...refsOnly(), member({ name: `repositories/acme/r.git/objects/pack/pack-${'b'.repeat(40)}.pack` }, Buffer.concat([Buffer.from('PACK\0\0\0\x02\0\0\0\0', 'latin1'), randomBytes(64)]))), /has no index beside it/],
    ['objects with no ref to reach them', () => tarGz(...metadata(), ...repositoryMembers(repo().files, (rest) => rest === 'HEAD' || rest.startsWith('objects/'))), /holds objects but no ref/],
    ['a loose commit that inflates to a GiB', () => tarGz(...base(), member({ name: `repositories/acme/r.git/objects/ab/${'c'.repeat(38)}` }, deflateSync(Buffer.from(`commit ${1 << 30}\0tree `)))), /is a commit of 1073741824 bytes/],
    ['a ref of a megabyte', () => tarGz(...base(), member({ name: 'repositories/acme/r.git/refs/heads/big' }, `${'a'.repeat(40)}${' '.repeat(1 << 20)}`)), /larger than a ref ever is/],
    ['a name of a megabyte', () => tarGz(...base(), paxHeader([['path', `${'n'.repeat(100_000)}.json`]]), member({ name: 'x.json' }, '[]')), /longer than a path may be/],
  ];
}

/**
 * Issue #42: archives the check read as one thing while an extractor unpacks another, or one that a
 * case-insensitive file system unpacks as fewer files than were checked. `repo` must be packed.
 */
export function readingHoles(repo: () => RealRepository): HostileCase[] {
  const at = (rest: string) => `repositories/acme/r.git/${rest}`;
  const base = () => [...metadata(), ...repositoryMembers(repo().files)];
  const intact = () => tarOf(...base());
  const packOf = () => {
    const pack = repo().files.find((file) => file.rest.endsWith('.pack'));
    if (!pack) throw new Error('the repository of these cases must be packed');
    return pack;
  };
  /** A repository with no history whose config runs a command whenever git shows output through a pager. */
  const noHistory = () => tarOf(
    ...metadata(),
    member({ name: at('HEAD') }, 'ref: refs/heads/main\n'),
    member({ name: at('config') }, '[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tpager = touch /tmp/svc-migrate-polyglot-ran; cat\n'),
  );
  const commit = () => repo().files.find((file) => file.rest === 'packed-refs')?.data.toString().match(/^([0-9a-f]{40}) refs\/heads\/main$/m)?.[1] ?? '';
  const nfc = 'caf\u00e9';
  const nfd = 'cafe\u0301';
  /** A problem naming one of two members as clashing with the other. */
  const clash = (one: string, other: string) => new RegExp(`${one}.*clashes with.*${other}|${other}.*clashes with.*${one}`);
  return [
    ...[1, 2, 3].map((bytes): HostileCase => [
      `an archive compressed twice whose first inflated chunk is ${bytes} byte${bytes === 1 ? '' : 's'} long`,
      () => slowStartGzip(gzipSync(intact()), bytes),
      /compress|gzip/i,
    ]),
    [
      'a tar archive in the FEXTRA field of a compressed stream inside, the first inflated chunk 1 byte long',
      () => slowStartGzip(polyglotGzip(intact(), noHistory()), 1),
      /./,
    ],
    [
      'CONFIG, setting core.fsmonitor, beside config',
      () => tarGz(...base(), member({ name: at('config') }, '[core]\n\tbare = true\n'), member({ name: at('CONFIG') }, '[core]\n\tbare = false\n\tfsmonitor = touch /tmp/svc-migrate-fsmonitor-ran\n')),
      clash('r.git/CONFIG', 'r.git/config'),
    ],
    [
      'a pack spelled .PACK beside the pack',
      () => tarGz(...base(), member({ name: at(packOf().rest.replace(/\.pack$/, '.PACK')) }, packOf().data)),
      clash('\\.PACK', '\\.pack'),
    ],
    ['Head, naming another branch, beside HEAD', () => tarGz(...base(), member({ name: at('Head') }, 'ref: refs/heads/other\n')), clash('r.git/Head', 'r.git/HEAD')],
    [
      'ISSUES_000001.json beside issues_000001.json',
      () => tarGz(...base(), member({ name: 'issues_000001.json' }, '[]'), member({ name: 'ISSUES_000001.json' }, '[{"repository":"https://h/acme/r"}]')),
      clash('ISSUES_000001.json', 'issues_000001.json'),
    ],
    [
      'one tag spelled in NFC and in NFD',
      () => tarGz(...base(), member({ name: at(`refs/tags/${nfc}`) }, `${commit()}\n`), member({ name: at(`refs/tags/${nfd}`) }, `${commit()}\n`)),
      // Or a name not in NFC refused as such: bsdtar writes NFC what GNU tar writes as it is.
      new RegExp(`${clash(`tags/${nfc}`, `tags/${nfd}`).source}|tags/${nfd}.*(NFC|normali[sz])`),
    ],
    [
      'a branch under Refs/ beside the same branch under refs/',
      () => tarGz(...base(), member({ name: at('refs/heads/main') }, `${commit()}\n`), member({ name: at('Refs/heads/main') }, `${'0'.repeat(40)}\n`)),
      clash('r.git/Refs', 'r.git/refs'),
    ],
  ];
}

/** What the attacker of issue #42 found: each of these verified (exit 0) before. */
export function thirdReviewCases(repo: () => RealRepository): HostileCase[] {
  const at = (rest: string) => `repositories/acme/r.git/${rest}`;
  const base = () => [...metadata(), ...repositoryMembers(repo().files)];
  const executable = (name: string) => ({ name, patch: [[100, '0000755\0']] as [number, string][] });
  /** A config that runs a command whenever git shows output through a pager (`git branch` on a terminal). */
  const pager = '[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tpager = touch /tmp/svc-migrate-pager-ran; cat\n';
  /** A bare repository's bones: with them a HEAD makes its directory a repository git finds. */
  const bones = (dir: string) => [member({ name: `${dir}HEAD` }, 'ref: refs/heads/main\n'), member({ name: `${dir}objects/`, type: '5' }), member({ name: `${dir}refs/`, type: '5' }), member({ name: `${dir}config` }, pager)];
  // cap_setuid=ep (vfs_cap_data, revision 2, effective): bsdtar run as root gives the file root's setuid.
  const capability = Buffer.alloc(20);
  capability.writeUInt32LE(0x02000001, 0);
  capability.writeUInt32LE(1 << 7, 4);
  /**
   * An ordinary file whose GNU header holds an old sparse map flagged as extended: bsdtar reads the
   * block after it as more of the map, the next header as the file's data, and the data after that
   * as a member GNU tar never sees: a symbolic link making an executable attachment the push hook.
   */
  const sparsePolyglot = () => {
    const gnu = { magic: 'ustar  \0', patch: [[386, '00000000000\0'], [398, '00000001000\0'], [482, '\x01']] as [number, string][] };
    const hidden = headerBlock({ name: at('hooks/post-update'), type: '2', linkName: '../../../../attachments/run.sh' });
    return tarGz(
      ...base(),
      headerBlock({ name: 'attachments/a', size: 512, ...gnu }),
      Buffer.alloc(512),
      headerBlock({ name: 'attachments/b', size: 512 }),
      hidden,
      member(executable('attachments/run.sh'), '#!/bin/sh\ntouch /tmp/svc-migrate-hook-ran\n'),
    );
  };
  return [
    ['a GNU header\'s sparse map on an ordinary file (bsdtar read a hook GNU tar never sees after it)', sparsePolyglot, /GNU header with sparse data or a real size/],
    ['a GNU header\'s real size on an ordinary file (bsdtar wrote a file of that size)', () => tarGz(...base(), member({ name: 'attachments/r', magic: 'ustar  \0', patch: [[483, '00000000100\0']] }, '0123456789')), /GNU header with sparse data or a real size/],
    ['an empty pax path on a directory (bsdtar makes the header\'s name, GNU tar ".")', () => tarGz(...base(), paxHeader([['path', '']]), member({ name: 'attachments/made-by-bsdtar/', type: '5' })), /path is empty/],
    ['a pax uid above 2^32 - 1 (GNU tar exits 2)', () => tarGz(...base(), paxHeader([['uid', '4294967296']]), member({ name: 'attachments/x' }, 'x')), /uid is out of GNU tar's range/],
    [
      'a file capability (cap_setuid) as an extended attribute, which bsdtar run as root sets',
      () => tarGz(...base(), paxHeader([['LIBARCHIVE.xattr.security.capability', capability.toString('base64').replace(/=+$/, '')]]), member(executable('attachments/run'), '#!/bin/sh\n')),
      /extended attribute \(LIBARCHIVE\.xattr\.security\.capability\)/,
    ],
    ['config. setting core.pager (Windows leaves the dot out)', () => tarGz(...base(), member({ name: at('config.') }, pager)), /ending with "\." or " "/],
    ['hooks /post-update (Windows leaves the space out)', () => tarGz(...base(), member(executable(at('hooks /post-update')), '#!/bin/sh\n')), /ending with "\." or " "/],
    ['a hook spelled with a character HFS+ leaves out of names', () => tarGz(...base(), member(executable(at('hooks/post-upd\u200cate')), '#!/bin/sh\n')), /HFS\+ leaves out/],
    ['a .git directory spelled with a character HFS+ leaves out', () => tarGz(...base(), member({ name: 'attachments/.g\u200dit/config' }, pager)), /"\.git" segment/],
    ['two names HFS+ takes for one', () => tarGz(...base(), member({ name: 'attachments/a\u200cb' }, '1'), member({ name: 'attachments/ab' }, '2')), /clashes with .* when what HFS\+ leaves out of names is ignored/],
    ['HEAD, objects/ and refs/ at the top, with a config setting core.pager (`git branch` in the extraction runs it)', () => tarGz(...metadata(), ...bones('')), /HEAD: is a file named HEAD, which makes its directory a git repository/],
    ['a repository of its own among the git data\'s other files', () => tarGz(...base(), ...bones(at('info/x/'))), /HEAD other than the repository's own/],
    ['a config setting gc.recentObjectsHook (git 2.42 and later runs it in gc and repack)', () => tarGz(...base(), member({ name: at('config') }, '[core]\n\tbare = true\n[gc]\n\tauto = 1\n\trecentObjectsHook = touch /tmp/svc-migrate-gc-ran\n')), /sets gc\.recentobjectshook/],
  ];
}

/** Every hostile archive above, each family on the repository it is made of: what no archive command may act on. */
export function everyHostileCase(loose: () => RealRepository, packed: () => RealRepository): HostileCase[] {
  return [...attackerSpellings(loose), ...secondReviewCases(loose), ...readingHoles(packed), ...thirdReviewCases(loose)];
}

/** The first case of each family above: a few of different kinds, for what is too slow to run on all. */
export function firstOfEachKind(loose: () => RealRepository, packed: () => RealRepository): HostileCase[] {
  const families = [attackerSpellings(loose), secondReviewCases(loose), readingHoles(packed), thirdReviewCases(loose)];
  return families.map(([first]) => first as HostileCase);
}
