import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { type ArchiveInput, buildArchive } from '../../src/sandbox/archive.js';
import { defaultBody } from '../../src/sandbox/state.js';
import { TarWriter } from '../../src/sandbox/tar.js';
import { runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';

// Issue #35, point 11: `sandbox --archive-size` archives are made as they are served, never written
// out and read back; their tar is the one the writer always made, their gzip a valid stored one.

const MiB = 1024 * 1024;
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-padded-'));

async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The input the sandbox builds a migration's archive from: two repositories of its seed. */
async function archiveInput(padBytes: number): Promise<ArchiveInput> {
  const { sandbox } = await testSandbox();
  const org = sandbox.store.organization('octo-org')!;
  const repositories = ['Hello-World', 'widgets'].map((name) => sandbox.store.repository(org, name)!);
  const migration = sandbox.store.start(org, defaultBody(repositories.map((r) => r.full_name)), repositories);
  const view = sandbox.store.view(migration);
  return {
    migration: view,
    organization: view.owner,
    repositories,
    seedOrganization: org,
    users: sandbox.store.seed.users,
    extrasOf: (repo) => sandbox.store.seedRepository(org, repo),
    padBytes,
  };
}

describe('a padded sandbox archive', () => {
  it('writes nothing, and its tar is the writer\'s own: members, padding.bin of the size, the end', async () => {
    const padBytes = 40 * MiB + 123;
    const input = await archiveInput(padBytes);
    const dir = tempDir();
    const archive = await buildArchive(dir, input);
    expect(readdirSync(dir)).toEqual([]);

    const whole = await bytesOf(archive.open(0, archive.size - 1));
    expect(whole.length).toBe(archive.size);
    expect(createHash('sha256').update(whole).digest('hex')).toBe(archive.sha256);
    // gunzip checks the CRC-32 and the length in the trailer.
    const tar = gunzipSync(whole);

    // What the writer made before this change for the same members and padding block: the members
    // (those of the unpadded archive, less its end), then `repeated` and `end`, as buildArchive did.
    const plain = gunzipSync(await bytesOf((await buildArchive(tempDir(), { ...input, padBytes: 0 })).open(0, Infinity)));
    const members = plain.subarray(0, plain.length - 1024);
    const block = tar.subarray(members.length + 512, members.length + 512 + MiB);
    const stream = new PassThrough();
    const reference = bytesOf(stream);
    const writer = new TarWriter(stream, Date.parse(input.migration.created_at));
    stream.write(members);
    await writer.repeated('padding.bin', padBytes, block);
    await writer.end();
    stream.end();
    expect(tar.equals(await reference)).toBe(true);
  }, 60_000);

  it('serves any range as the same bytes as the whole, at once', async () => {
    const archive = await buildArchive(tempDir(), await archiveInput(3 * MiB + 7));
    const whole = await bytesOf(archive.open(0, archive.size - 1));
    const ranges = [
      [0, 0],
      [0, 9],
      [10, 14],
      [11, 70_000],
      [65_545, 65_551],
      [archive.size - 8, archive.size - 1],
      [1_234_567, archive.size - 1],
      [archive.size - 1, archive.size - 1],
    ];
    for (const [start, end] of ranges as [number, number][]) {
      expect((await bytesOf(archive.open(start, end))).equals(whole.subarray(start, end + 1)), `${start}-${end}`).toBe(true);
    }
  });

  it('through the sandbox: ETag is the sha256, a resume from the middle continues the same bytes', async () => {
    const { sandbox, env, fetch } = await testSandbox({ archivePadBytes: 5 * MiB, exportSeconds: 0.2 });
    const result = await runCli(['start', 'widgets', '--wait', '--json', '--interval', '0.1'], { env });
    const started = JSON.parse(result.stdout) as { id: number };
    const location = await fetch(`${sandbox.baseUrl}/orgs/octo-org/migrations/${started.id}/archive`, {
      headers: { authorization: `Bearer ${sandbox.ownerToken}` },
      redirect: 'manual',
    }).then((r) => r.headers.get('location') ?? '');
    const full = await fetch(location);
    const body = Buffer.from(await full.arrayBuffer());
    expect(full.headers.get('etag')).toBe(`"${createHash('sha256').update(body).digest('hex')}"`);
    expect(Number(full.headers.get('content-length'))).toBe(body.length);
    const rest = await fetch(location, { headers: { range: 'bytes=2000000-', 'if-range': full.headers.get('etag')! } });
    expect(rest.status).toBe(206);
    expect(Buffer.from(await rest.arrayBuffer()).equals(body.subarray(2_000_000))).toBe(true);
    expect(gunzipSync(body).length).toBeGreaterThan(5 * MiB);
  });
});

describe('an unpadded sandbox archive', () => {
  it('whose data directory is gone fails its build, heard by the caller (a sandbox closing mid-request)', async () => {
    const input = await archiveInput(0);
    await expect(buildArchive(join(tempDir(), 'removed'), input)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('an archive the sandbox wrote out', () => {
  it('a read cut short while it opens a file already removed ends quietly (the sandbox closing under a download)', async () => {
    const dir = tempDir();
    const archive = await buildArchive(dir, await archiveInput(0));
    rmSync(dir, { recursive: true });
    const stream = archive.open(0, archive.size - 1);
    stream.destroy();
    // Without a listener of the sandbox's own, the ENOENT that comes after this is uncaught, and
    // vitest fails the run for it.
    await new Promise((resolve) => stream.once('close', resolve));
    expect(stream.destroyed).toBe(true);
  });
});
