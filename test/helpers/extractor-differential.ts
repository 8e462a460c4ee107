import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, chmodSync, constants, copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scanArchive } from '../../src/core/archive/scan.js';
import type { ReadMember } from '../../src/core/archive/scan-parts.js';

// The property of issue #42: whatever our reading of a .tar.gz passes (the scan complete, no
// problem), GNU tar and bsdtar each extract exactly as read: the same paths, files of the same sizes
// and sha256, exit 0; and no two of its paths are one path where letter case and Unicode
// normalization are ignored. Archives are read in-process; the extractors run only on those we
// pass, hundreds to a shell loop, so thousands of archives cost seconds of process starts.

interface Extractor {
  name: string;
  /** The program, run as `<program> -xf FILE -C DIR`. */
  program: string;
}

const GNU_TAR: Extractor = { name: 'GNU tar', program: 'tar' };
const BSDTAR: Extractor = { name: 'bsdtar', program: 'bsdtar' };

/**
 * Scratch space in memory where there is some: each archive and each extraction is a few small
 * files, which cost 0.4 ms apiece on a virtual machine's ext4, 8 µs on tmpfs.
 */
const SCRATCH = writable('/dev/shm') ? '/dev/shm' : tmpdir();

/** Archives read at once: a reading inflates on libuv's threads while the next one parses here. */
const READ_AT_ONCE = 4;

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

const installed = (program: string) => spawnSync(program, ['--version'], { stdio: 'ignore' }).status === 0;

/** bsdtar comes with Debian's libarchive-tools, which .ci/run installs; GNU tar is everywhere. */
export const hasBsdtar = installed(BSDTAR.program);
export const EXTRACTORS: Extractor[] = hasBsdtar ? [GNU_TAR, BSDTAR] : [GNU_TAR];

/**
 * The fold under which two paths are one: Unicode canonical decomposition (NFD, so a composed "é"
 * and "e" with a combining accent meet), then full case mapping to upper case and back to lower
 * (so "ß", "SS" and "ss", "K" and the Kelvin sign "K", "ſ" and "s" meet). It joins at least what
 * case-insensitive, normalization-insensitive file systems (APFS, NTFS, exFAT) join.
 */
const folded = (path: string) => path.normalize('NFD').toUpperCase().toLowerCase();

/** A name as messages show it: quoted, and cut short (a name of the archive may be 4 KiB). */
const quoted = (name: string) => JSON.stringify(name.length > 120 ? `${name.slice(0, 120)}…` : name);

type EntryType = ReadMember['type'];

interface TreeEntry {
  type: EntryType;
  size?: number;
  sha256?: string;
}

/** Paths (relative, `/`-separated) and what is at each. */
type Tree = Map<string, TreeEntry>;

/**
 * The path a member's name takes on disk: `.` and empty segments are nothing to a file system, so
 * `./a//b` is `a/b`. An absolute name and `..` stay as they are: extractors strip or refuse them,
 * so a reading that passed one never meets what they wrote.
 */
function pathOf(name: string): string {
  if (name.startsWith('/')) return name;
  return name.split('/').filter((segment) => segment !== '' && segment !== '.').join('/');
}

/** What extracting the members as read writes, each parent directory included, or why no extraction can. */
function expectedTree(members: ReadMember[]): Tree | string {
  const tree: Tree = new Map();
  for (const member of members) {
    // Never handed to an extractor: it would write later members through the link, wherever it points.
    if (member.type !== 'file' && member.type !== 'directory') return `${quoted(member.name)} is a ${member.type}, which no migration archive holds`;
    const path = pathOf(member.name);
    if (path === '') {
      if (member.type !== 'directory') return `${quoted(member.name)} is a ${member.type} where the extraction's own directory is`;
      continue;
    }
    const segments = path.split('/');
    for (let depth = 1; depth < segments.length; depth++) {
      const parent = segments.slice(0, depth).join('/');
      const there = tree.get(parent);
      if (!there) tree.set(parent, { type: 'directory' });
      else if (there.type !== 'directory') return `${quoted(member.name)} lies under ${quoted(parent)}, a ${there.type} of the archive`;
    }
    const there = tree.get(path);
    if (member.type === 'directory') {
      if (there && there.type !== 'directory') return `${quoted(member.name)} is a directory where a ${there.type} of the archive is`;
      tree.set(path, { type: 'directory' });
    } else {
      if (there) return `${quoted(member.name)} is written where a ${there.type} of the archive already is (an extractor keeps one of the two)`;
      tree.set(path, { type: member.type, size: member.size, ...(member.sha256 ? { sha256: member.sha256 } : {}) });
    }
  }
  return tree;
}

/** Two paths of the tree that are one under the fold, if any. */
function foldClash(tree: Tree): [string, string] | undefined {
  const seen = new Map<string, string>();
  for (const path of tree.keys()) {
    const other = seen.get(folded(path));
    if (other !== undefined) return [other, path];
    seen.set(folded(path), path);
  }
  return undefined;
}

/** What an extractor wrote under `root`. Directories are opened to their owner first: an archive may give them any mode. */
function treeOf(root: string): Tree {
  const tree: Tree = new Map();
  const walk = (dir: string, prefix: string) => {
    chmodSync(dir, 0o700);
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = prefix ? `${prefix}/${entry.name}` : entry.name;
      const full = join(dir, entry.name);
      if (entry.isDirectory()) {
        tree.set(path, { type: 'directory' });
        walk(full, path);
      } else if (entry.isFile()) {
        chmodSync(full, 0o600);
        const data = readFileSync(full);
        tree.set(path, { type: 'file', size: data.length, sha256: createHash('sha256').update(data).digest('hex') });
      } else {
        tree.set(path, { type: entry.isSymbolicLink() ? 'symlink' : 'special' });
      }
    }
  };
  walk(root, '');
  return tree;
}

const describeEntry = (entry: TreeEntry) => (entry.type === 'file' ? `file of ${entry.size} bytes, sha256 ${entry.sha256?.slice(0, 12)}…` : entry.type);

function differences(read: Tree, extracted: Tree): string[] {
  const found: string[] = [];
  for (const [path, entry] of read) {
    const there = extracted.get(path);
    if (!there) found.push(`${quoted(path)} (${describeEntry(entry)}) was read but not extracted`);
    else if (describeEntry(there) !== describeEntry(entry)) found.push(`${quoted(path)} was read as ${describeEntry(entry)}, extracted as ${describeEntry(there)}`);
  }
  for (const [path, entry] of extracted) if (!read.has(path)) found.push(`${quoted(path)} (${describeEntry(entry)}) was extracted but never read`);
  return found;
}

export type Verdict = { ok: true; passed: boolean } | { ok: false; why: string };

interface Reading {
  passed: boolean;
  members: ReadMember[];
}

async function readByUs(file: string): Promise<Reading> {
  const members: ReadMember[] = [];
  const scan = await scanArchive(file, { onMemberRead: (member) => members.push(member) });
  return { passed: scan.complete && scan.problems.size === 0, members };
}

const listed = (members: ReadMember[]) => {
  const names = members.map((member) => quoted(member.name));
  return `${members.length} member${members.length === 1 ? '' : 's'}: ${names.slice(0, 12).join(', ')}${names.length > 12 ? ', …' : ''}`;
};

/** An archive we passed, waiting for the extractors' word. */
interface Passed {
  index: number;
  tree: Tree;
  members: ReadMember[];
}

/** Archives read, then extracted, at a time. */
const BATCH = 250;
/** Ceiling on one extractor's loop over a batch: only a hang reaches it. */
const BATCH_CEILING_MS = 10 * 60_000;

/**
 * The verdict on each archive `archiveAt(0 … count-1)` makes: refused by our reading, or passed and
 * extracted by every extractor exactly as read. Batches are pipelined: while the extractors work
 * through one, the next is read. A failing archive is kept, and its path is in the verdict.
 */
export async function judgeArchives(count: number, archiveAt: (index: number) => Buffer): Promise<Verdict[]> {
  const verdicts: Verdict[] = [];
  let extracting: Promise<void> = Promise.resolve();
  for (let start = 0; start < count; start += BATCH) {
    const dir = mkdtempSync(join(SCRATCH, 'svc-extractor-differential-'));
    const passed: Passed[] = [];
    const indices = Array.from({ length: Math.min(count, start + BATCH) - start }, (_, offset) => start + offset);
    for (const index of indices) writeFileSync(join(dir, `${index}.tar.gz`), archiveAt(index));
    await eachAtOnce(indices, READ_AT_ONCE, async (index) => {
      const file = join(dir, `${index}.tar.gz`);
      let reading: Reading;
      try {
        reading = await readByUs(file);
      } catch (error) {
        verdicts[index] = { ok: false, why: `our reading threw ${(error as Error).stack ?? String(error)} (archive kept: ${keep(file, index)})` };
        return;
      }
      if (!reading.passed) {
        verdicts[index] = { ok: true, passed: false };
        return;
      }
      const tree = expectedTree(reading.members);
      const clash = typeof tree === 'string' ? undefined : foldClash(tree);
      if (typeof tree === 'string' || clash) {
        const why = typeof tree === 'string'
          ? tree
          : `${quoted(clash?.[0] ?? '')} and ${quoted(clash?.[1] ?? '')} are one path when letter case and Unicode normalization are ignored (macOS and Windows extract one over the other)`;
        verdicts[index] = { ok: false, why: `our reading passed it (${listed(reading.members)}), but ${why} (archive kept: ${keep(file, index)})` };
        return;
      }
      passed.push({ index, tree, members: reading.members });
    });
    // One batch extracts while the next is read; the two never overlap further.
    await extracting;
    extracting = extractAndCompare(dir, passed, verdicts).finally(() => rmSync(dir, { recursive: true, force: true }));
    // A hang's error is thrown where the batch is awaited, not reported as unhandled before.
    extracting.catch(() => {});
  }
  await extracting;
  return verdicts;
}

let kept: string | undefined;

/** A copy of an archive that failed, where it stays for whoever reads the failure (tmpdir, not scratch in memory). */
function keep(file: string, index: number): string {
  kept ??= mkdtempSync(join(tmpdir(), 'svc-extractor-differential-failed-'));
  const path = join(kept, `${index}-${createHash('sha256').update(readFileSync(file)).digest('hex').slice(0, 12)}.tar.gz`);
  copyFileSync(file, path);
  return path;
}

/** Runs `work` on every item, `width` at a time. */
async function eachAtOnce<T>(items: T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++] as T);
  };
  await Promise.all(Array.from({ length: width }, worker));
}

async function extractAndCompare(dir: string, passed: Passed[], verdicts: Verdict[]): Promise<void> {
  if (passed.length === 0) return;
  const ids = passed.map((archive) => String(archive.index));
  await Promise.all(EXTRACTORS.map((extractor, which) => extractEach(dir, `x${which}`, extractor, ids)));
  for (const archive of passed) {
    const disagreements: string[] = [];
    for (const [which, extractor] of EXTRACTORS.entries()) {
      const out = join(dir, `x${which}`, String(archive.index));
      const code = readFileSync(`${out}.rc`, 'utf8').trim();
      const said = readFileSync(`${out}.err`, 'utf8').trim().split('\n').slice(0, 3).map((line) => line.slice(0, 300)).join(' / ');
      const found = differences(archive.tree, treeOf(out));
      if (code !== '0' || found.length > 0) {
        const listedFound = found.slice(0, 8).join('; ') + (found.length > 8 ? `; and ${found.length - 8} more` : '');
        disagreements.push(`${extractor.name} (${extractor.program} -xf FILE -C DIR) exited ${code}${said ? ` saying "${said}"` : ''}${found.length ? `: ${listedFound}` : ''}`);
      }
    }
    if (disagreements.length === 0) verdicts[archive.index] = { ok: true, passed: true };
    else {
      const file = keep(join(dir, `${archive.index}.tar.gz`), archive.index);
      verdicts[archive.index] = { ok: false, why: `our reading passed it (${listed(archive.members)}), but ${disagreements.join('; and ')} (archive kept: ${file})` };
    }
  }
}

/**
 * One shell loop extracting every archive of `ids` with one extractor, each into `<key>/<id>`, its
 * exit code to `<key>/<id>.rc` and what it said to `<key>/<id>.err`.
 */
function extractEach(dir: string, key: string, extractor: Extractor, ids: string[]): Promise<void> {
  for (const id of ids) mkdirSync(join(dir, key, id), { recursive: true });
  const script = `for i; do ${extractor.program} -xf "$i.tar.gz" -C "${key}/$i" 2>"${key}/$i.err"; echo $? >"${key}/$i.rc"; done`;
  return new Promise((resolve, reject) => {
    // Its own process group, so a hang is ended with every process it started.
    const child = spawn('sh', ['-c', script, 'sh', ...ids], {
      cwd: dir,
      // A UTF-8 locale, as a user's shell has: in the C locale bsdtar cannot write a name from a pax header that is not ASCII.
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C.UTF-8' },
      stdio: 'ignore',
      detached: true,
    });
    const timer = setTimeout(() => {
      process.kill(-(child.pid as number), 'SIGKILL');
      reject(new Error(`${extractor.name} did not extract ${ids.length} archives within ${BATCH_CEILING_MS / 1000} s (archives ${ids[0]}…${ids.at(-1)})`));
    }, BATCH_CEILING_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`the ${extractor.name} loop ended with ${code}`));
    });
  });
}
