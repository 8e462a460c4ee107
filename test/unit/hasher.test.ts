import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startBackgroundHash } from '../../src/core/hasher.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('the background hash', () => {
  it('hashes a file on another thread: the main thread keeps turning while it works', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-hasher-'));
    dirs.push(dir);
    const path = join(dir, 'archive');
    const chunk = randomBytes(1 << 20);
    const expected = createHash('sha256');
    const chunks = Array.from({ length: 128 }, (_, i) => {
      chunk[0] = i;
      expected.update(chunk);
      return Buffer.from(chunk);
    });
    writeFileSync(path, Buffer.concat(chunks));

    const hash = startBackgroundHash();
    hash.follow(path);
    let turns = 0;
    let done = false;
    const turn = () => {
      turns++;
      if (!done) setImmediate(turn);
    };
    setImmediate(turn);
    hash.advance(128 << 20);
    const digest = await hash.digest();
    done = true;
    expect(digest).toBe(expected.digest('hex'));
    // Hashing 128 MiB takes tens of milliseconds at least; on the main thread no turn would pass.
    expect(turns).toBeGreaterThan(20);
  });
});
