// Benchmark: `archive verify` of the 1 GiB archive against `tar tzf` reading the same file, and the
// check's peak memory on it, on the sandbox's small archive, and on a 250 MB metadata file of
// `[{},{},…]` (a few hundred KB compressed), and on 250,000 empty members with long names (each
// kept to find names that clash when letter case is ignored): whatever an archive holds, the check
// stays small.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { Header } from 'tar';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, median, NODE, run, sandboxWithExport } from './lib.js';

const MiB = 1024 * 1024;

export async function verifyBench({ size = 1024 * MiB, runs = 5 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-verify-'));
  const big = join(dir, 'big.tar.gz');
  const small = join(dir, 'small.tar.gz');
  const bomb = join(dir, 'bomb.tar.gz');
  const many = join(dir, 'many.tar.gz');
  try {
    const { sandbox, location } = await sandboxWithExport({ archivePadBytes: size });
    try {
      await run(`curl -sS -o ${big} '${location}'`);
    } finally {
      await sandbox.close();
    }
    const plain = await sandboxWithExport({});
    try {
      await run(`curl -sS -o ${small} '${plain.location}'`);
    } finally {
      await plain.sandbox.close();
    }
    const records = Math.floor((250 * 1000 * 1000 - 2) / 3);
    writeFileSync(join(dir, 'issues_000001.json'), `[${'{},'.repeat(records - 1)}{}]`);
    writeFileSync(join(dir, 'schema.json'), '{"version":"1.2.0"}');
    await run(`tar -C ${dir} -czf ${bomb} schema.json issues_000001.json && rm ${join(dir, 'issues_000001.json')}`);

    writeFileSync(many, manyMembers(250_000));

    // Both read the file from the page cache: one untimed read first, so neither pays for the disk.
    await run(`cat ${big} > /dev/null`);
    const commands = {
      ours: `'${NODE}' ${BIN} archive verify ${big} > /dev/null`,
      tar: `tar tzf ${big} > /dev/null`,
    };
    const times = { ours: [], tar: [] };
    const rss = { big: [], small: [], bomb: [], many: [] };
    for (let i = 0; i < runs; i++) {
      for (const name of i % 2 ? ['tar', 'ours'] : ['ours', 'tar']) {
        const result = await run(commands[name]);
        times[name].push(result.ms);
        if (name === 'ours') rss.big.push(result.rssMb);
        process.stderr.write(`  verify ${size / MiB} MiB, ${name}: ${result.ms.toFixed(0)} ms\n`);
      }
      rss.small.push((await run(`'${NODE}' ${BIN} archive verify ${small} > /dev/null`)).rssMb);
      rss.many.push((await run(`'${NODE}' ${BIN} archive verify ${many} > /dev/null`)).rssMb);
    }
    // The bomb is slow to count (tens of millions of records): fewer rounds.
    for (let i = 0; i < Math.min(runs, 2); i++) {
      const result = await run(`'${NODE}' ${BIN} archive verify ${bomb} > /dev/null`);
      rss.bomb.push(result.rssMb);
      process.stderr.write(`  verify the metadata bomb: ${result.ms.toFixed(0)} ms, ${result.rssMb.toFixed(0)} MB\n`);
    }
    const smallRss = median(rss.small);
    return [
      {
        name: `archive verify ${size / MiB} MiB (git fsck included)`,
        ours: median(times.ours),
        baseline: median(times.tar),
        baselineName: 'tar tzf f >/dev/null',
        target: 1.0,
      },
      {
        name: `peak RSS (MB), archive verify ${size / MiB} MiB vs the sandbox's small archive`,
        ours: median(rss.big),
        baseline: smallRss,
        baselineName: 'same, a 3-repository archive',
        unit: 'MB',
        absolute: { limit: 150, value: median(rss.big) },
      },
      {
        name: 'peak RSS (MB), archive verify of a 250 MB metadata file of empty objects',
        ours: median(rss.bomb),
        baseline: smallRss,
        baselineName: 'same, a 3-repository archive',
        unit: 'MB',
        absolute: { limit: 150, value: median(rss.bomb) },
      },
      {
        name: 'peak RSS (MB), archive verify of 250,000 empty members with 70-character names',
        ours: median(rss.many),
        baseline: smallRss,
        baselineName: 'same, a 3-repository archive',
        unit: 'MB',
        absolute: { limit: 150, value: median(rss.many) },
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A .tar.gz of `count` empty files under 1,000 directories, each name some 70 characters. */
function manyMembers(count) {
  const blocks = [];
  for (let i = 0; i < count; i++) {
    const path = `attachments/d${i % 1000}/${'x'.repeat(60)}-${String(i).padStart(7, '0')}.png`;
    const block = Buffer.alloc(512);
    new Header({ path, size: 0, type: 'File', mode: 0o644, mtime: new Date(0) }).encode(block);
    blocks.push(block);
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}
