import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type TarEntry, TarFormatError, TarReader } from '../../src/core/archive/tar-reader.js';
import { TarWriter } from '../../src/sandbox/tar.js';

// The archive check reads what GNU tar writes in each of its formats, fed in pieces of any size.

const LONG = `repositories/octo-org/${'a-very-long-repository-name-'.repeat(5)}.git/objects/pack/pack-0123456789abcdef.idx`;

function fixture(format: string): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'tar-reader-'));
  const root = join(dir, 'root');
  mkdirSync(join(root, LONG, '..'), { recursive: true });
  writeFileSync(join(root, LONG), 'x'.repeat(1500));
  writeFileSync(join(root, 'schema.json'), '{"version":"1.2.0"}\n');
  symlinkSync('schema.json', join(root, 'link'));
  execFileSync('tar', [`--format=${format}`, '-cf', join(dir, 'a.tar'), '-C', root, 'schema.json', 'link', 'repositories']);
  return readFileSync(join(dir, 'a.tar'));
}

function read(bytes: Buffer, piece: number) {
  const entries: (TarEntry & { data: string })[] = [];
  const reader = new TarReader((entry) => {
    let data = '';
    return { data: (chunk) => (data += chunk.toString()), end: () => entries.push({ ...entry, data }) };
  });
  for (let at = 0; at < bytes.length; at += piece) reader.push(bytes.subarray(at, at + piece));
  reader.finish();
  return entries;
}

describe('TarReader', () => {
  it.each(['gnu', 'pax'])('reads long names, links and data written by GNU tar --format=%s', (format) => {
    const bytes = fixture(format);
    for (const piece of [bytes.length, 512, 333, 1]) {
      const entries = read(bytes, piece);
      expect(entries.find((e) => e.name === 'schema.json')?.data).toBe('{"version":"1.2.0"}\n');
      expect(entries.find((e) => e.name === 'link')).toMatchObject({ type: 'symlink', linkName: 'schema.json' });
      expect(entries.find((e) => e.name === LONG)).toMatchObject({ type: 'file', size: 1500, data: 'x'.repeat(1500) });
    }
  });

  it('refuses a broken header and an archive cut short', async () => {
    const bytes = fixture('pax');
    const broken = Buffer.from(bytes);
    broken[0] = (broken[0] as number) ^ 0xff;
    expect(() => read(broken, 512)).toThrow(TarFormatError);
    expect(() => read(bytes.subarray(0, 1024 + 700), 512)).toThrow(/truncated/);
    // Without the end-of-archive marker the structure is not complete either.
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (chunk: Buffer) => chunks.push(chunk));
    await new TarWriter(out, 0).file('schema.json', '{}');
    const reader = new TarReader(() => undefined);
    reader.push(Buffer.concat(chunks));
    expect(() => reader.finish()).toThrow(/end-of-archive marker/);
  });
});
