import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { archiveRefs, bareRemotes, gitDaemon, gitDirRefs, lsRemote, refusingHook, runGit, smartHttp } from '../helpers/git-remotes.js';

// The helpers of the restore tests proved with plain git: each remote takes a push and lists it back,
// the update hook refuses its one ref and lets the others land, and the archive oracle reads refs as
// git does. Were one of them wrong, the restore tests built on them could pass for the wrong reason.

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-git-remotes-test-'));

/** A repository of two commits on main, a branch, a lightweight and an annotated tag (`extra` more branches). */
async function tinyRepository(options: { branches?: number; bigFile?: number } = {}): Promise<string> {
  const work = join(tempDir(), 'work');
  await runGit(['init', '-q', work]);
  writeFileSync(join(work, 'README.md'), '# tiny\n');
  await runGit(['add', '.'], work);
  await runGit(['commit', '-q', '-m', 'first'], work);
  await runGit(['tag', 'v0'], work);
  writeFileSync(join(work, 'code.js'), 'export {};\n');
  if (options.bigFile) writeFileSync(join(work, 'big.bin'), randomBytes(options.bigFile));
  await runGit(['add', '.'], work);
  await runGit(['commit', '-q', '-m', 'second'], work);
  await runGit(['tag', '-a', '-m', 'release one', 'v1'], work);
  await runGit(['branch', 'feature', 'HEAD~1'], work);
  for (let i = 0; i < (options.branches ?? 0); i++) {
    await runGit(['commit', '-q', '--allow-empty', '-m', `commit ${i}`], work);
    await runGit(['branch', `many/${i}`], work);
  }
  return work;
}

/** The refs of a working repository as for-each-ref lists them (annotated tags by the tag object's id, as ls-remote does). */
const refsOf = (work: string) => gitDirRefs(join(work, '.git'));

const pushAll = (work: string, url: string) => runGit(['push', '-q', url, 'refs/heads/*:refs/heads/*', 'refs/tags/*:refs/tags/*'], work);

describe('git remotes on loopback for the restore tests', () => {
  it('git daemon takes a push (receive-pack enabled) and lsRemote lists it back: refs/ only, annotated tags unpeeled', async () => {
    const work = await tinyRepository();
    const root = tempDir();
    await bareRemotes(root, ['acme/r.git']);
    const daemon = await gitDaemon(root);
    expect(daemon.url).toMatch(/^git:\/\/127\.0\.0\.1:\d+\/$/);
    await pushAll(work, `${daemon.url}acme/r.git`);
    const listed = await lsRemote(`${daemon.url}acme/r.git`);
    expect(listed).toEqual(await refsOf(work));
    expect([...listed.keys()].sort()).toEqual(['refs/heads/feature', 'refs/heads/main', 'refs/tags/v0', 'refs/tags/v1']);
    await daemon.close();
    await expect(lsRemote(`${daemon.url}acme/r.git`)).rejects.toThrow(/ls-remote/);
  });

  it('two daemons at once each find a port of their own', async () => {
    const root = tempDir();
    await bareRemotes(root, ['acme/r.git']);
    const [one, two] = await Promise.all([gitDaemon(root), gitDaemon(root)]);
    expect(one.url).not.toBe(two.url);
    expect(await lsRemote(`${two.url}acme/r.git`)).toEqual(new Map());
  });

  it('smart HTTP through git http-backend takes a chunked push and answers a gzip\'d request; lsRemote lists it back', async () => {
    // A pack past http.postBuffer (1 MiB) is sent chunked; a clone's wants past 1 KiB are sent gzip'd.
    const work = await tinyRepository({ branches: 40, bigFile: 1_500_000 });
    const root = tempDir();
    await bareRemotes(root, ['acme/r.git']);
    const http = await smartHttp(root);
    expect(http.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    await pushAll(work, `${http.url}acme/r.git`);
    expect(await lsRemote(`${http.url}acme/r.git`)).toEqual(await refsOf(work));

    const clone = join(tempDir(), 'clone');
    await runGit(['clone', '-q', '--mirror', `${http.url}acme/r.git`, clone]);
    expect(await gitDirRefs(clone)).toEqual(await refsOf(work));
    await runGit(['fsck', '--no-progress'], clone);

    const posts = http.requests.filter((request) => request.method === 'POST');
    expect(posts).toContainEqual(expect.objectContaining({ url: '/acme/r.git/git-receive-pack', chunked: true, status: 200 }));
    expect(posts).toContainEqual(expect.objectContaining({ url: '/acme/r.git/git-upload-pack', contentEncoding: 'gzip', status: 200 }));
    expect(http.requests.every((request) => request.status === 200)).toBe(true);
  });

  it('smart HTTP answers a repository that is not there with 404', async () => {
    const http = await smartHttp(tempDir());
    await expect(lsRemote(`${http.url}acme/none.git`)).rejects.toThrow(/not found|404/i);
    expect(http.requests.map((request) => request.status)).toContain(404);
  });

  it('a file:// remote takes a push and lsRemote lists it back', async () => {
    const work = await tinyRepository();
    const root = tempDir();
    const [bare] = await bareRemotes(root, ['acme/r.git']);
    await pushAll(work, `file://${bare}`);
    expect(await lsRemote(`file://${bare}`)).toEqual(await refsOf(work));
  });

  it('the update hook refuses its one ref with its message, and the push\'s other refs land (over git daemon)', async () => {
    const work = await tinyRepository();
    const root = tempDir();
    const [bare] = await bareRemotes(root, ['acme/r.git']);
    refusingHook(bare!, 'refs/tags/v1', 'tags here are made by the release team');
    const daemon = await gitDaemon(root);
    const url = `${daemon.url}acme/r.git`;
    await expect(pushAll(work, url)).rejects.toThrow(/remote: tags here are made by the release team[\s\S]*\[remote rejected\] +v1 -> v1 \(hook declined\)/);
    const expected = await refsOf(work);
    expected.delete('refs/tags/v1');
    expect(await lsRemote(url)).toEqual(expected);
  });

  it('the oracle reads every repository of an archive with tar and for-each-ref: wikis by their name, an empty one empty', async () => {
    const work = await tinyRepository();
    const dir = tempDir();
    const top = join(dir, 'tree', 'repositories', 'acme');
    mkdirSync(top, { recursive: true });
    await runGit(['clone', '-q', '--mirror', work, join(top, 'r.git')]);
    await runGit(['pack-refs', '--all'], join(top, 'r.git'));
    await runGit(['clone', '-q', '--mirror', work, join(top, 'r.wiki.git')]);
    await runGit(['update-ref', '-d', 'refs/tags/v0'], join(top, 'r.wiki.git'));
    await runGit(['init', '-q', '--bare', join(top, 'empty.git')]);
    writeFileSync(join(dir, 'tree', 'schema.json'), '{}');
    const archive = join(dir, 'a.tar.gz');
    execFileSync('tar', ['czf', archive, '-C', join(dir, 'tree'), '.']);

    const refs = await archiveRefs(archive);
    const wiki = await refsOf(work);
    wiki.delete('refs/tags/v0');
    expect(refs).toEqual(new Map([['acme/empty', new Map()], ['acme/r', await refsOf(work)], ['acme/r.wiki', wiki]]));
  });
});
