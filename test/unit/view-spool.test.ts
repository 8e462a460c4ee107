import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Spool } from '../../src/core/view/spool.js';

// archive view's spool: what each page is written from, appended as the metadata streams, read
// back page by page in the order appended, whichever group of pages a file holds.

describe('Spool', () => {
  it('gives each page its values in order, across groups, flushes and reads in any order', async () => {
    const spool = new Spool(mkdtempSync(join(tmpdir(), 'svc-view-spool-')));
    const pages = Array.from({ length: 300 }, () => spool.open());
    const expected = new Map<number, unknown[]>(pages.map((page) => [page, []]));
    // Interleaved as comments of many issues come, with values large enough to flush several times.
    for (let round = 0; round < 40; round++) {
      for (const page of pages) {
        if ((page + round) % 3 === 0) continue;
        const value = { page, round, text: 'é'.repeat(500 + page) };
        expected.get(page)!.push(value);
        await spool.append(page, value);
      }
    }
    await spool.flush();
    for (const page of pages) expect(await spool.read(page)).toEqual(expected.get(page));
    for (const page of [299, 0, 150, 64, 63]) expect(await spool.read(page)).toEqual(expected.get(page));
    expect(await spool.read(spool.open())).toEqual([]);
  });
});
