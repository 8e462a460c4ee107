import { describe, expect, it } from 'vitest';
import { options, refused } from '../helpers/command-options.js';

// The options of `archive verify`, `extract`, `restore` and `view`, read and checked through the seam of
// src/context.ts: what each would run with, or the usage error (exit 2) a user sees before any
// archive is read. Nothing is started.

describe('archive verify', () => {
  it('takes the migration, the git check and its time', async () => {
    expect(await options(['archive', 'verify', 'a.tgz', '--migration', '42', '--git-check-time', '5m'])).toEqual({ file: 'a.tgz', migration: 42, gitCheck: true, gitTimeMs: 300_000 });
    expect(await options(['archive', 'verify', 'a.tgz', '--no-git-check'])).toEqual({ file: 'a.tgz', gitCheck: false });
  });

  it('refuses a git check time of 0', async () => {
    await refused(['archive', 'verify', 'a.tgz', '--git-check-time', '0s'], '--git-check-time takes a duration above 0 (`--no-git-check` skips the check)');
  });
});

describe('archive extract', () => {
  it('takes the archive, the directory, --force and the git check time', async () => {
    expect(await options(['archive', 'extract', 'a.tgz', 'out'])).toEqual({ file: 'a.tgz', dir: 'out', force: false });
    expect(await options(['archive', 'extract', 'a.tgz', 'out', '--force', '--git-check-time', '90s'])).toEqual({ file: 'a.tgz', dir: 'out', force: true, gitTimeMs: 90_000 });
  });

  it('needs a directory', async () => {
    await refused(['archive', 'extract', 'a.tgz'], /missing the <dir> argument/);
  });
});

describe('archive view', () => {
  it('takes the archive, -o, --force, --no-verify and --serve with its port', async () => {
    expect(await options(['archive', 'view', 'a.tgz', '-o', 'site'])).toEqual({ file: 'a.tgz', dir: 'site', force: false, verify: true });
    expect(await options(['archive', 'view', 'a.tgz', '--output', 'site', '--force', '--no-verify', '--serve', '--port', '8080'])).toEqual({ file: 'a.tgz', dir: 'site', force: true, verify: false, serve: 8080 });
    expect(await options(['archive', 'view', 'a.tgz', '-o', 'site', '--serve'])).toEqual({ file: 'a.tgz', dir: 'site', force: false, verify: true, serve: 0 });
  });

  it('needs -o, refuses an empty one, a bad port, and --port without --serve', async () => {
    await refused(['archive', 'view', 'a.tgz'], /-o, --output <dir> is required/);
    await refused(['archive', 'view', 'a.tgz', '-o', ''], /-o\/--output/);
    await refused(['archive', 'view', 'a.tgz', '-o', 'site', '--serve', '--port', '70000'], /a port is a whole number/);
    await refused(['archive', 'view', 'a.tgz', '-o', 'site', '--port', '80'], '--port is the port of --serve');
  });
});

describe('archive restore', () => {
  const to = 'file:///srv/git/{owner}/{repo}.git';

  it('defaults: four pushes at once, the journal beside the archive, nothing forced', async () => {
    expect(await options(['archive', 'restore', 'a.tgz', '--to', to])).toEqual({
      file: 'a.tgz',
      template: to,
      parallel: 4,
      dryRun: false,
      force: false,
      includePullRefs: false,
      journalPath: 'a.tgz.restore.json',
    });
  });

  it('takes every flag', async () => {
    const argv = ['archive', 'restore', 'a.tgz', '--to', to, '--only', 'widgets', 'octo-org/docs', '--parallel', '8', '--dry-run', '--force', '--include-pull-refs', '--journal', 'j.json'];
    expect(await options(argv)).toEqual({
      file: 'a.tgz',
      template: to,
      only: ['widgets', 'octo-org/docs'],
      parallel: 8,
      dryRun: true,
      force: true,
      includePullRefs: true,
      journalPath: 'j.json',
    });
  });

  it.each([
    [[], /archive restore needs --to TEMPLATE/],
    [['--to', 'file:///srv/{owner}.git'], /has no \{repo\}: every repository would go to the same place/],
    [['--to', 'file:///srv/{name}/{repo}.git'], /--to has \{name\}, which is neither \{owner\} nor \{repo\}/],
    [['--to', '/srv/git/{repo}.git'], /is not a git URL this command pushes to/],
    [['--to', 'ext::sh -c touch% /tmp/x {repo}'], /space or control character/],
    [['--to', 'ext::sh{repo}'], /is not a git URL this command pushes to/],
    [['--to', 'host::{repo}'], /is not a git URL this command pushes to/],
    [['--to', '-oProxyCommand=x:{repo}'], /is not a git URL this command pushes to/],
    [['--to', 'file://srv/{repo}.git'], /a file URL without an absolute path/],
    [['--to', 'ftp://host/{repo}.git'], /is not a git URL this command pushes to/],
    // A file URL's %, ? and # are read by git (percent-decoding, a query, a fragment), not as the path written.
    [['--to', 'file:///srv/100%25/{repo}.git'], /--to/],
    [['--to', 'file:///srv/git/{repo}.git?x=1'], /--to/],
    [['--to', 'file:///srv/git/{repo}#1.git'], /--to/],
    [['--to', to, '--parallel', '0'], /--parallel/],
    [['--to', to, '--parallel', '33'], /--parallel is at most 32/],
    [['--to', to, '--journal', ''], /--journal takes a file path/],
    [['--to', to, '--git-check-time', '0'], /--git-check-time takes a duration above 0/],
  ])('refuses %j', async (flags, message) => {
    await refused(['archive', 'restore', 'a.tgz', ...flags], message);
  });

  it.each(['ssh://git@git.example.com/{owner}/{repo}.git', 'git@git.example.com:{owner}/{repo}.git', 'https://git.example.com/{repo}.git', 'git://127.0.0.1:9418/{repo}'])(
    'takes %s',
    async (template) => {
      expect(await options(['archive', 'restore', 'a.tgz', '--to', template])).toMatchObject({ template });
    },
  );
});
