import { execFileSync, spawnSync } from 'node:child_process';
import { linkSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memberProblem } from '../../src/core/archive/member-names.js';
import { type TarMember, TarMemberReader } from '../../src/core/archive/tar-members.js';
import { TarWriter } from '../../src/sandbox/tar.js';
import { EXTRACTORS } from '../helpers/extractor-differential.js';
import { gnuLongName, headerBlock, member, paxHeader, tarOf } from '../helpers/tar-bytes.js';

// The archive check reads tar with npm's `tar`; importers extract with GNU tar. Over a corpus made
// here (GNU tar's own formats, the sandbox's writer, and headers built byte by byte) and thousands
// of damaged copies of it, whatever the check reads without a problem GNU tar lists alike: the
// same names, types, sizes and link targets, in the same order. A header the two could read
// differently must be a problem, never a silent difference.

type Listed = Pick<TarMember, 'name' | 'type' | 'size' | 'linkName'>;

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-tar-diff-'));

async function ours(tar: Buffer): Promise<Listed[] | { failed: string }> {
  const members: Listed[] = [];
  try {
    await pipeline(
      Readable.from([tar.subarray(0, 700), tar.subarray(700)]),
      new TarMemberReader((entry) => {
        members.push({ name: entry.name, type: entry.type, size: entry.size, linkName: entry.linkName });
        return undefined;
      }),
    );
    return members;
  } catch (error) {
    return { failed: (error as Error).message };
  }
}

const TYPES: Record<string, Listed['type']> = { '-': 'file', C: 'file', d: 'directory', l: 'symlink', h: 'hardlink', c: 'special', b: 'special', p: 'special' };

/** GNU tar's C-style quoting (`--quoting-style=c`) undone, to the bytes of the name, read as UTF-8. */
function unquote(quoted: string): string {
  const bytes: number[] = [];
  const simple: Record<string, number> = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, '\\': 92, '"': 34, '?': 63 };
  const body = Buffer.from(quoted.slice(1, -1), 'latin1');
  for (let i = 0; i < body.length; i++) {
    const byte = body[i] as number;
    if (byte !== 0x5c) {
      bytes.push(byte);
      continue;
    }
    const next = String.fromCharCode(body[++i] as number);
    if (/[0-7]/.test(next)) {
      let digits = next;
      while (digits.length < 3 && /[0-7]/.test(String.fromCharCode(body[i + 1] as number))) digits += String.fromCharCode(body[++i] as number);
      bytes.push(parseInt(digits, 8));
    } else bytes.push(simple[next] ?? next.charCodeAt(0));
  }
  return Buffer.from(bytes).toString('utf8');
}

function gnu(tar: Buffer): { code: number | null; members: Listed[] } {
  const run = spawnSync('tar', ['--quoting-style=c', '--numeric-owner', '-tvf', '-'], { input: tar, env: { PATH: process.env.PATH ?? '', LC_ALL: 'C' } });
  const members: Listed[] = [];
  for (const line of run.stdout.toString('latin1').split('\n')) {
    if (!line) continue;
    const quote = line.indexOf('"');
    const [perm = '', , size = ''] = line.slice(0, quote).trim().split(/\s+/);
    const names = /^("(?:[^"\\]|\\.)*")(?: (?:->|link to) ("(?:[^"\\]|\\.)*"))?$/.exec(line.slice(quote));
    const type = TYPES[perm[0] ?? ''] ?? 'special';
    members.push({
      name: unquote(names?.[1] ?? '""'),
      type,
      size: type === 'special' ? 0 : Number(size),
      linkName: names?.[2] ? unquote(names[2]) : '',
    });
  }
  // A leading `./` is where extraction writes the name without it (`./` itself: the directory extracted into).
  return { code: run.status, members: members.filter((m) => m.name !== './').map((m) => ({ ...m, name: m.name.replace(/^\.\//, '') })) };
}

/** Members of a list as our reader reports them, for comparison with GNU's (specials carry no size there). */
const comparable = (members: Listed[]) => members.map((m) => ({ ...m, size: m.type === 'special' ? 0 : m.size }));

async function expectAgreement(tar: Buffer, label: string): Promise<void> {
  const read = await ours(tar);
  expect(read, `${label}: our reader refused it: ${JSON.stringify(read)}`).toBeInstanceOf(Array);
  const listed = gnu(tar);
  expect(listed.code, `${label}: GNU tar failed`).toBe(0);
  expect(comparable(read as Listed[]), label).toEqual(listed.members);
}

/** A tree with every kind of name GNU tar encodes differently by format. */
function sampleTree(): string {
  const root = join(tempDir(), 'root');
  const deep = join(root, 'repositories', 'acme', `${'long-directory-name-'.repeat(4)}x.git`, 'objects', 'pack');
  mkdirSync(deep, { recursive: true });
  writeFileSync(join(root, 'schema.json'), '{"version":"1.2.0"}');
  writeFileSync(join(root, 'empty.json'), '');
  writeFileSync(join(root, 'café.json'), '[]');
  writeFileSync(join(deep, `pack-${'a'.repeat(40)}.pack`), Buffer.alloc(1500, 7));
  writeFileSync(join(root, 'repositories', 'acme', `${'n'.repeat(140)}.json`), 'x');
  linkSync(join(root, 'schema.json'), join(root, 'hard.json'));
  symlinkSync(`${'../'.repeat(2)}${'t'.repeat(120)}`, join(root, 'repositories', 'link'));
  return root;
}

describe('the check reads tar as GNU tar does', () => {
  it('GNU tar\'s own formats: ustar with a prefix, pax, GNU long names, v7', async () => {
    const root = sampleTree();
    for (const format of ['gnu', 'oldgnu', 'pax', 'posix', 'ustar', 'v7']) {
      const file = join(tempDir(), `${format}.tar`);
      // ustar and v7 cannot hold every name: tar leaves those out (exit 2) and writes the rest.
      spawnSync('tar', [`--format=${format}`, '-cf', file, '-C', root, '.'], { stdio: 'ignore' });
      await expectAgreement(readFileSync(file), format);
    }
  });

  it('the same name twice (tar --append), and the sandbox\'s writer with pax names', async () => {
    const root = sampleTree();
    const file = join(tempDir(), 'twice.tar');
    execFileSync('tar', ['--format=gnu', '-cf', file, '-C', root, 'schema.json']);
    writeFileSync(join(root, 'schema.json'), '{"version":"2"}');
    execFileSync('tar', ['--format=gnu', '-rf', file, '-C', root, 'schema.json']);
    await expectAgreement(readFileSync(file), 'appended');

    const chunks: Buffer[] = [];
    const out = new (await import('node:stream')).PassThrough();
    out.on('data', (chunk: Buffer) => chunks.push(chunk));
    const writer = new TarWriter(out, Date.parse('2024-01-01T00:00:00Z'));
    await writer.directory(`repositories/${'o'.repeat(90)}/${'r'.repeat(90)}.git`);
    await writer.file(`repositories/${'o'.repeat(90)}/${'r'.repeat(90)}.git/${'x'.repeat(120)}`, 'data');
    await writer.symlink('l', 't'.repeat(150));
    await writer.end();
    await expectAgreement(Buffer.concat(chunks), 'sandbox writer');
  });

  it('headers built byte by byte: GNU times in 345–500, base-256 sizes, links, pax and long names', async () => {
    await expectAgreement(handmade(), 'handmade');
  });

  it('holds every header the library frames to GNU tar\'s reading (the check is hooked into the library)', async () => {
    // "ustar\0" with another version: GNU tar reads a name prefix, the library none. Only the
    // check on the library's header blocks can see it; without it the library reads "n.json".
    const tar = tarOf(member({ name: 'n.json', magic: 'ustar\0xx', at345: 'hidden' }, 'x'));
    expect(gnu(tar).members.map((m) => m.name)).toEqual(['hidden/n.json']);
    expect(await ours(tar)).toEqual({ failed: 'a header with an unknown format marker: tar readers could extract something other than what is checked' });
  });

  it('refuses a header whose device numbers are not numbers, even an old-style one: bsdtar refuses the archive, GNU tar extracts it', async () => {
    // The extractor differential's seed 207376207: a v7 header (no such fields) with byte 329 set to 1.
    const name = 'xepositories/acme/r.git/Refs/heads/main';
    const v7 = '\0'.repeat(8);
    const bsdtar = EXTRACTORS.find((extractor) => extractor.name === 'bsdtar');
    for (const at of [329, 337]) {
      const tar = tarOf(member({ name, magic: v7, patch: [[at, Buffer.from([1])]] }));
      expect(gnu(tar)).toEqual({ code: 0, members: [{ name, type: 'file', size: 0, linkName: '' }] });
      if (bsdtar) expect(spawnSync(bsdtar.program, ['-tf', '-'], { input: tar }).stderr.toString()).toContain('Unrecognized archive format');
      const field = at === 329 ? 'device major field (bytes 329–336)' : 'device minor field (bytes 337–344)';
      expect(await ours(tar)).toEqual({ failed: `a header whose ${field} is not a plain number, which bsdtar refuses in an archive's first header, device or not: tar readers could extract something other than what is checked` });
    }
    // Left empty, or an octal number ended by NULs, as writers put it: read.
    for (const devices of ['\0'.repeat(16), '0000000\0'.repeat(2)]) {
      expect(await ours(tarOf(member({ name, magic: v7, patch: [[329, devices]] })))).toEqual([{ name, type: 'file', size: 0, linkName: '' }]);
    }
  });

  it('whatever it reads of a damaged archive without a problem, GNU tar reads alike', async () => {
    const base = handmade();
    const headers = headerOffsets(base);
    // Digits, terminators, separators, type flags, base-256 markers and the letters of "ustar".
    const alphabet = [...Buffer.from('\0 01578\n/.xgLKSustar', 'latin1'), 0x80, 0xff];
    const fields: [number, number][] = [[0, 100], [100, 8], [124, 12], [136, 12], [148, 8], [156, 1], [157, 100], [257, 8], [345, 155]];
    const mutation = fc.record({
      header: fc.nat(),
      field: fc.nat(),
      at: fc.nat(),
      bytes: fc.array(fc.constantFrom(...alphabet), { minLength: 1, maxLength: 4 }),
      inBody: fc.boolean(),
      fixChecksum: fc.integer({ min: 0, max: 9 }),
    });
    let agreed = 0;
    await fc.assert(
      fc.asyncProperty(mutation, async (m) => {
        const tar = Buffer.from(base);
        const offset = headers[m.header % headers.length] as number;
        if (m.inBody) {
          // The body of a pax or long-name header, or of a file.
          tar.set(m.bytes, offset + 512 + (m.at % 200));
        } else {
          const [start, length] = fields[m.field % fields.length] as [number, number];
          tar.set(m.bytes.slice(0, length), offset + start + (m.at % length));
          if (m.fixChecksum > 0) fixChecksum(tar, offset);
        }
        const read = await ours(tar);
        // A name or link the check refuses fails the archive whatever GNU tar makes of it.
        if (!Array.isArray(read) || read.some(refused)) return;
        const listed = gnu(tar);
        expect({ code: listed.code, members: comparable(read) }, JSON.stringify(m)).toEqual({ code: 0, members: listed.members });
        agreed++;
      }),
      { seed: 3300, numRuns: 500 },
    );
    // Most damage is refused; enough is read to make the comparison mean something.
    expect(agreed).toBeGreaterThan(40);
  }, 120_000);
});

/** Links are refused whatever they point to; the comparison is of their names and targets only. */
function refused(member: Listed): boolean {
  if (member.type === 'symlink' || member.type === 'hardlink') return memberProblem({ ...member, type: 'file', mode: 0 }) !== undefined;
  return memberProblem({ ...member, mode: 0 }) !== undefined;
}

function handmade(): Buffer {
  const base256Size = Buffer.alloc(12);
  base256Size[0] = 0x80;
  base256Size[11] = 5;
  const gnuTimes = Buffer.from(`${'14000000000'}\0${'14000000000'}\0`);
  return tarOf(
    member({ name: 'schema.json' }, '{"version":"1.2.0"}'),
    member({ name: 'dir/', type: '5' }),
    paxHeader([['path', `attachments/acme/${'p'.repeat(120)}.json`], ['mtime', '1700000000.5']]),
    member({ name: 'ignored-by-pax' }, 'pax'),
    gnuLongName(`attachments/acme/${'q'.repeat(130)}.json`),
    member({ name: 'ignored-by-gnu', magic: 'ustar  \0' }, 'gnu'),
    member({ name: 'link', type: '2', linkName: 'schema.json' }),
    member({ name: 'hard', type: '1', linkName: 'schema.json' }),
    gnuLongName(`dir/${'k'.repeat(120)}`, 'K'),
    member({ name: 'longlink', type: '2', magic: 'ustar  \0', linkName: `dir/${'k'.repeat(95)}` }),
    member({ name: 'gnu-times.json', magic: 'ustar  \0', at345: gnuTimes }, 'times'),
    Buffer.concat([headerBlock({ name: 'base256.json', sizeField: base256Size }), Buffer.from('12345'.padEnd(512, '\0'))]),
    member({ name: 'n.json', at345: 'p'.repeat(50) }, 'prefixed'),
    paxHeader([['comment', 'a global comment']], 'g'),
    member({ name: 'last.json' }, '[]'),
  );
}

/** Where each header block of `handmade()` starts (its own framing, which the test knows). */
function headerOffsets(tar: Buffer): number[] {
  const offsets: number[] = [];
  for (let at = 0; at + 512 <= tar.length;) {
    const block = tar.subarray(at, at + 512);
    if (block.every((byte) => byte === 0)) break;
    offsets.push(at);
    const size = block[124] === 0x80 ? block.readUIntBE(124 + 6, 6) : parseInt(block.toString('latin1', 124, 136), 8);
    const type = String.fromCharCode(block[156] as number);
    const data = type === '5' || type === '1' || type === '2' ? 0 : size;
    at += 512 + Math.ceil(data / 512) * 512;
  }
  return offsets;
}

function fixChecksum(tar: Buffer, offset: number): void {
  tar.write('        ', offset + 148, 'latin1');
  let sum = 0;
  for (let i = offset; i < offset + 512; i++) sum += tar[i] as number;
  tar.write(`${sum.toString(8).padStart(6, '0')}\0`, offset + 148, 'latin1');
}
