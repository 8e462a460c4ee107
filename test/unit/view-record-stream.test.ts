import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MetadataFormatError } from '../../src/core/archive/metadata-records.js';
import { RecordTooLargeError, wholeRecords } from '../../src/core/view/record-stream.js';

// archive view's reader of metadata files: each object of the top-level array whole, as JSON.parse
// reads it, however the file's bytes fall into the pieces it is read in; a record over 1 MiB refused.

async function read(text: string): Promise<unknown[]> {
  const file = join(mkdtempSync(join(tmpdir(), 'svc-view-records-')), 'issues_000001.json');
  writeFileSync(file, text);
  const records: unknown[] = [];
  for await (const record of wholeRecords(file)) records.push(record);
  return records;
}

describe('wholeRecords', () => {
  it('gives each record as JSON.parse reads it, records and characters across the 64 KiB pieces it reads', async () => {
    // Bodies of multi-byte characters whose lengths put record and character edges on piece edges.
    const records = Array.from({ length: 40 }, (_, i) => ({
      type: 'issue',
      url: `https://h/o/r/issues/${i + 1}`,
      body: 'é日🎉\\"'.repeat(3000 + i * 917),
      labels: ['https://h/o/r/labels/a', { nested: [1, 2, { deep: null }] }],
      n: i,
    }));
    const text = ` \n[ ${records.map((record) => JSON.stringify(record, null, record.n % 2 ? 2 : 0)).join(' ,\n')} ]\n`;
    expect(await read(text)).toEqual(records);
  });

  it('passes over what is not an object, and gives nothing of a file that is not an array', async () => {
    expect(await read('[1, "two", null, [3], {"a": 1}, true]')).toEqual([{ a: 1 }]);
    expect(await read('{"version": "1.2.0"}')).toEqual([]);
  });

  it('refuses a record over 1 MiB, and JSON that is not', async () => {
    await expect(read(`[{"body": "${'x'.repeat(1 << 20)}"}]`)).rejects.toThrow(RecordTooLargeError);
    await expect(read('[{"a": 1}, {"b": }]')).rejects.toThrow(MetadataFormatError);
  });
});
