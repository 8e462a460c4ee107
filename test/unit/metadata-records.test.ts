import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_VALUE_BYTES, MetadataFormatError, MetadataRecordReader, type ThinRecord } from '../../src/core/archive/metadata-records.js';

// The streaming reader of metadata files against JSON.parse, the reference: the same verdict on
// any text, the same number of records, the same fields; and bounds JSON.parse does not have.

type Outcome = { ok: true; records: number | undefined; fields: (ThinRecord | undefined)[] } | { ok: false };

function readAll(text: string | Buffer, pieces = 1): Outcome {
  const bytes = typeof text === 'string' ? Buffer.from(text) : text;
  const fields: (ThinRecord | undefined)[] = [];
  const reader = new MetadataRecordReader((record) => fields.push(record));
  try {
    const step = Math.max(1, Math.ceil(bytes.length / pieces));
    for (let at = 0; at < bytes.length; at += step) reader.write(bytes.subarray(at, at + step));
    reader.end();
    return { ok: true, records: reader.records, fields };
  } catch (error) {
    if (!(error instanceof MetadataFormatError)) throw error;
    return { ok: false };
  }
}

function reference(text: string): { ok: true; records: number | undefined } | { ok: false } {
  try {
    const parsed: unknown = JSON.parse(text);
    return { ok: true, records: Array.isArray(parsed) ? parsed.length : undefined };
  } catch {
    return { ok: false };
  }
}

describe('metadata records', () => {
  it('agrees with JSON.parse on any JSON value, cut anywhere', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), fc.integer({ min: 1, max: 7 }), (value, pieces) => {
        const text = JSON.stringify(value, null, pieces % 2 ? 1 : undefined) ?? 'null';
        const ours = readAll(text, pieces);
        expect(ours).toMatchObject(reference(text));
      }),
      { seed: 33, numRuns: 400 },
    );
  });

  it('agrees with JSON.parse on broken JSON', () => {
    const mutate = fc.tuple(fc.jsonValue({ maxDepth: 4 }), fc.nat(), fc.constantFrom('', ',', ']', '}', '[', '{', '"', ':', ' x', '\\', '01', '-', '1e', 'nul'));
    fc.assert(
      fc.property(mutate, ([value, at, insert]) => {
        const text = JSON.stringify([value]);
        const cut = at % (text.length + 1);
        const broken = text.slice(0, cut) + insert + text.slice(cut);
        expect(readAll(broken, 3).ok).toBe(reference(broken).ok);
      }),
      { seed: 34, numRuns: 600 },
    );
  });

  it('keeps only the fields the report needs', () => {
    const text = JSON.stringify([
      { full_name: 'o/a', owner: { login: 'o', id: 1, nested: { url: 'x' } }, body: 'long', url: 'https://h/o/a', size: 12, forks: 3, pushed_at: 'p', created_at: 'c' },
      { repository: { html_url: 'https://h/o/b', owner: { login: 'o' } }, url: 'https://h/o/b/issues/1' },
      42,
      ['x'],
    ]);
    const result = readAll(text, 5);
    expect(result).toEqual({
      ok: true,
      records: 4,
      fields: [
        { full_name: 'o/a', owner: { login: 'o' }, url: 'https://h/o/a', size: 12, pushed_at: 'p', created_at: 'c' },
        { repository: { html_url: 'https://h/o/b', owner: { login: 'o' } }, url: 'https://h/o/b/issues/1' },
        undefined,
        undefined,
      ],
    });
  });

  it('refuses a byte-order mark, deep nesting and endless values', () => {
    expect(readAll(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('[]')])).ok).toBe(false);
    expect(readAll('['.repeat(100) + ']'.repeat(100)).ok).toBe(false);
    expect(readAll(`["${'a'.repeat(MAX_VALUE_BYTES + (256 << 10))}"]`, 200).ok).toBe(false);
    expect(readAll(`[${' '.repeat(MAX_VALUE_BYTES + (256 << 10))}]`, 200).ok).toBe(false);
  });
});
