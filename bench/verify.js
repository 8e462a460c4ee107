// Benchmark: `archive verify` of the 1 GiB archive against `tar tzf` reading the same file.
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, median, run, sandboxWithExport } from './lib.js';

const MiB = 1024 * 1024;

export async function verifyBench({ size = 1024 * MiB, runs = 5 } = {}) {
  const file = join(tmpdir(), `svc-bench-${process.pid}-verify.tar.gz`);
  const { sandbox, location } = await sandboxWithExport({ archivePadBytes: size });
  try {
    await run(`curl -sS -o ${file} '${location}'`);
  } finally {
    await sandbox.close();
  }
  // Both read the file from the page cache: one untimed read first, so neither pays for the disk.
  await run(`cat ${file} > /dev/null`);
  const commands = {
    ours: `node ${BIN} archive verify ${file} > /dev/null`,
    tar: `tar tzf ${file} > /dev/null`,
  };
  const times = { ours: [], tar: [] };
  try {
    for (let i = 0; i < runs; i++) {
      for (const name of i % 2 ? ['tar', 'ours'] : ['ours', 'tar']) {
        const result = await run(commands[name]);
        times[name].push(result.ms);
        process.stderr.write(`  verify ${size / MiB} MiB, ${name}: ${result.ms.toFixed(0)} ms\n`);
      }
    }
  } finally {
    rmSync(file, { force: true });
  }
  return [
    {
      name: `archive verify ${size / MiB} MiB (git fsck included)`,
      ours: median(times.ours),
      baseline: median(times.tar),
      baselineName: 'tar tzf f >/dev/null',
      target: 1.5,
    },
  ];
}
