import { describe, expect, it } from 'vitest';
import { MIGRATION_FIELDS } from '../../src/api/types.js';
import { jsonRefusal, NO_PROMPT, options, refused } from '../helpers/command-options.js';
import { parseCli } from '../helpers/run-cli.js';

// The options of the commands that talk to the service, read and checked through the seam of
// src/context.ts: what each command would run with, or the usage error a user sees (exit 2, the
// message and hint on stderr). Nothing is started: no sandbox, no request, no process.

describe('start', () => {
  it('takes repositories as arguments, and each body flag as it is', async () => {
    expect(await options(['start', 'widgets', 'octo-org/docs.site', '--lock', '--exclude-releases', '--exclude-attachments', '--exclude', 'repositories'])).toEqual({
      args: ['widgets', 'octo-org/docs.site'],
      flags: { lock: true, excludeReleases: true, excludeAttachments: true, exclude: 'repositories' },
    });
  });

  it('waits only with --wait: --interval in seconds to the millisecond, --timeout a duration', async () => {
    expect(await options(['start', 'widgets', '--wait'])).toMatchObject({ wait: {} });
    expect(await options(['start', 'widgets', '--wait', '--interval', '2.5', '--timeout', '1h30m'])).toMatchObject({
      wait: { intervalMs: 2500, timeoutMs: 5_400_000 },
    });
    expect(await options(['start', 'widgets', '--timeout', '90m'])).not.toHaveProperty('wait');
  });

  it('refuses a --timeout that is no duration before anything is started', async () => {
    await refused(['start', 'widgets', '--wait', '--timeout', 'soon'], '--timeout takes a duration such as 30s, 5m, 90m or 2h, not "soon"');
  });

  it.each([
    ['0', /expected a number of seconds above 0 and at most 2000000, to the millisecond, not "0"/],
    ['0.0001', /to the millisecond, not "0\.0001"/],
    ['2500000', /at most 2000000/],
    ['1e3', /not "1e3"/],
  ])('refuses --interval %s', async (value, message) => {
    await refused(['start', 'widgets', '--wait', '--interval', value], message);
  });

  it('--exclude takes repositories only', async () => {
    await refused(['start', 'widgets', '--exclude', 'metadata'], '--exclude must be one of repositories, not "metadata"');
  });

  it('without a repository: asks on a terminal, refuses without one, in CI and with --no-input', async () => {
    expect(await options(['start'], { stdinIsTTY: true })).toEqual({ args: [], flags: {} });
    const hint = `pass repository names or --repos-file ${NO_PROMPT}`;
    await refused(['start'], 'at least one repository is required', hint);
    await refused(['start', '--no-input'], 'at least one repository is required', hint, { stdinIsTTY: true });
    await refused(['start'], 'at least one repository is required', hint, { stdinIsTTY: true, env: { CI: 'true' } });
  });

  it('without a repository: --repos-file, --org-metadata-only and --sandbox need none', async () => {
    expect(await options(['start', '--repos-file', 'repos.txt'])).toMatchObject({ flags: { reposFile: 'repos.txt' } });
    expect(await options(['start', '--repos-file', '-'])).toMatchObject({ flags: { reposFile: '-' } });
    expect(await options(['start', '--org-metadata-only'])).toMatchObject({ flags: { orgMetadataOnly: true } });
    expect(await options(['start', '--sandbox'])).toMatchObject({ args: [] });
    expect(await options(['start'], { env: { SVC_SANDBOX: '1' } })).toMatchObject({ args: [] });
  });

  it('--org-metadata-only with repositories named is a usage error', async () => {
    await refused(['start', 'widgets', '--org-metadata-only'], '--org-metadata-only exports no repositories; do not name any', 'drop the repository names, or drop --org-metadata-only');
  });
});

describe('status', () => {
  it('takes migration ids, each once, in the order given', async () => {
    expect(await options(['status', '4242', '17', '4242'])).toEqual({ ids: [4242, 17], allPending: false, excludeRepositories: false });
  });

  it('needs an id or --all-pending', async () => {
    await refused(['status'], 'give at least one migration id, or --all-pending');
    expect(await options(['status', '--all-pending'])).toEqual({ ids: [], allPending: true, excludeRepositories: false });
  });

  it.each(['../7', '0', '-1', '1.5', '9007199254740993', 'abc'])('refuses the id %j before any request', async (id) => {
    await refused(['status', '--', id], new RegExp(`a migration id is a positive integer, not "${id.replace(/[.]/g, '\\.')}"`));
  });

  it('--wait with --interval and --timeout; --exclude repositories', async () => {
    expect(await options(['status', '1', '--wait', '--interval', '10', '--timeout', '2h', '--exclude', 'repositories'])).toEqual({
      ids: [1],
      allPending: false,
      excludeRepositories: true,
      wait: { intervalMs: 10_000, timeoutMs: 7_200_000 },
    });
    await refused(['status', '1', '--wait', '--timeout', '2 hours'], /--timeout takes a duration/);
  });

  it('--json with fields: only those of a migration, checked before any request', async () => {
    expect((await parseCli(['status', '1', '--json', 'id,state'])).code).toBe(0);
    expect((await parseCli(['status', '1', '--json=id,created_at'])).code).toBe(0);
    // A migration id after --json is an id, not a field list.
    expect(await options(['status', '--json', '4242'])).toMatchObject({ ids: [4242] });
    // With --json the error is one JSON line, its message naming every valid field.
    expect(await jsonRefusal(['status', '1', '--json', 'id,nope,stat'])).toBe(
      `unknown --json fields "nope", "stat"; the fields of a migration are: ${MIGRATION_FIELDS.join(', ')}`,
    );
  });
});

describe('list', () => {
  it('defaults: the first page, every state, repositories included', async () => {
    expect(await options(['list'])).toEqual({ excludeRepositories: false });
  });

  it('paging, --state and --exclude', async () => {
    expect(await options(['list', '--per-page', '100', '--page', '2', '--all', '--state', 'exported', '--exclude', 'repositories'])).toEqual({
      perPage: 100,
      page: 2,
      all: true,
      state: 'exported',
      excludeRepositories: true,
    });
  });

  it.each([
    [['--per-page', '0'], /expected a positive integer, not "0"/],
    [['--per-page', 'abc'], /expected a positive integer, not "abc"/],
    [['--page', '-2'], /expected a positive integer, not "-2"|unknown option '-2'/],
    [['--state', 'done'], '--state must be one of pending, exporting, exported, failed, not "done"'],
    [['--exclude', 'metadata'], '--exclude must be one of repositories, not "metadata"'],
    [['--no-such-flag'], 'unknown option \'--no-such-flag\''],
  ])('refuses %j', async (args, message) => {
    await refused(['list', ...args], message);
  });

  it('--json id,state passes; an unknown field names the valid ones; a parse error with --json is one JSON line', async () => {
    expect((await parseCli(['list', '--json', 'id,state,created_at'])).code).toBe(0);
    expect(await jsonRefusal(['list', '--json', 'id,nope'])).toMatch(/^unknown --json field "nope"; the fields of a migration are: id, /);
    expect(await jsonRefusal(['list', '--json', '--per-page', 'abc'])).toMatch(/expected a positive integer, not "abc"/);
    expect(await jsonRefusal(['list', '--json', '--no-such-flag'])).toBe('unknown option \'--no-such-flag\'');
  });
});

describe('repos', () => {
  it('takes the migration id and the paging flags', async () => {
    expect(await options(['repos', '4242'])).toEqual({ id: 4242 });
    expect(await options(['repos', '4242', '--per-page', '10', '--page', '3', '--all'])).toEqual({ id: 4242, perPage: 10, page: 3, all: true });
  });

  it('needs the id, and --json fields of a repository', async () => {
    await refused(['repos'], 'missing the <migration-id> argument', 'see `svc-migrate repos --help`');
    expect((await parseCli(['repos', '4242', '--json', 'full_name,size'])).code).toBe(0);
    expect(await jsonRefusal(['repos', '4242', '--json', 'full_name,state'])).toMatch(/^unknown --json field "state"; the fields of a repository are: id, /);
  });

  it('--names prints names alone, so not with --json', async () => {
    expect(await options(['repos', '4242', '--all', '--names'])).toEqual({ id: 4242, all: true, names: true });
    expect(await jsonRefusal(['repos', '4242', '--names', '--json'])).toBe('--names and --json do not go together');
  });
});

describe('download', () => {
  it('defaults: migration-<id>.tar.gz, checked and verified', async () => {
    expect(await options(['download', '4242'])).toEqual({ id: 4242, download: { checksum: true, verify: true } });
  });

  it('-o, --force, --no-checksum, --no-verify and --max-size in bytes with a binary suffix', async () => {
    expect(await options(['download', '4242', '-o', 'a.tgz', '--force', '--no-checksum', '--no-verify', '--max-size', '200G'])).toEqual({
      id: 4242,
      download: { output: 'a.tgz', force: true, checksum: false, verify: false, maxSize: 200 * 1024 ** 3 },
    });
    for (const [size, bytes] of [['500M', 500 * 1024 ** 2], ['1KiB', 1024], ['2tb', 2 * 1024 ** 4], ['12345', 12345]] as const) {
      expect(await options(['download', '1', '--max-size', size]), size).toMatchObject({ download: { maxSize: bytes } });
    }
    await refused(['download', '1', '--max-size', 'lots'], /expected a size in bytes such as 500M or 200G, not "lots"/);
    await refused(['download', '1', '--max-size', '0'], /"0" is not a usable size/);
    await refused(['download', '1', '--max-size', '99999999T'], /"99999999T" is not a usable size/);
  });

  it('--wait with its flags', async () => {
    expect(await options(['download', '1', '--wait', '--timeout', '45s'])).toMatchObject({ wait: { timeoutMs: 45_000 } });
    expect(await options(['download', '1', '--timeout', '45s'])).not.toHaveProperty('wait');
  });

  it('-o with an empty name is refused', async () => {
    await refused(['download', '1', '-o', ''], '-o/--output is empty', 'name a file or a directory, or - for stdout');
  });

  it('-o - into a pipe is taken; on a terminal refused, naming the commands that work (with the flags given)', async () => {
    expect(await options(['download', '4242', '-o', '-'])).toMatchObject({ download: { output: '-' } });
    await refused(['download', '4242', '-o', '-'], 'stdout is a terminal: not writing the archive there (-o -); pipe it or use -o FILE',
      '`svc-migrate download 4242 -o - | tar -tz` lists it; `svc-migrate download 4242` saves it', { stdoutIsTTY: true });
    await refused(['download', '4242', '-o', '-', '--org', 'acme', '--no-verify', '--wait'], /pipe it or use -o FILE/,
      '`svc-migrate download 4242 -o - --org acme --no-verify | tar -tz` lists it; `svc-migrate download 4242 --org acme --no-verify` saves it', { stdoutIsTTY: true });
  });

  it('the id is required and checked', async () => {
    await refused(['download'], 'missing the <migration-id> argument');
    await refused(['download', '12ab'], /a migration id is a positive integer, not "12ab"/);
    expect(await jsonRefusal(['download', '--json'])).toBe('missing the <migration-id> argument');
    expect(await jsonRefusal(['status', 'abc', '--json'])).toMatch(/a migration id is a positive integer, not "abc"/);
  });
});

describe('delete-archive', () => {
  it('--yes, or a terminal to ask on; nothing else confirms', async () => {
    expect(await options(['delete-archive', '4242', '--yes'])).toEqual({ id: 4242, yes: true });
    expect(await options(['delete-archive', '4242', '-y'])).toEqual({ id: 4242, yes: true });
    expect(await options(['delete-archive', '4242'], { stdinIsTTY: true })).toEqual({ id: 4242 });
    const hint = `pass --yes ${NO_PROMPT}`;
    await refused(['delete-archive', '4242'], 'confirmation is required', hint);
    await refused(['delete-archive', '4242', '--no-input'], 'confirmation is required', hint, { stdinIsTTY: true });
  });
});

describe('unlock', () => {
  it('named repositories, --all, or --repo with or without the id', async () => {
    const one = (request: object) => ({ kind: 'one', request });
    expect(await options(['unlock', '4242', 'widgets', 'docs.site'])).toEqual(one({ id: 4242, names: ['widgets', 'docs.site'] }));
    expect(await options(['unlock', '4242', '--all'])).toEqual(one({ id: 4242, names: [], all: true }));
    expect(await options(['unlock', '--repo', 'widgets'])).toEqual(one({ names: [], repo: 'widgets' }));
    expect(await options(['unlock', '4242', '--repo', 'widgets'])).toEqual(one({ id: 4242, names: [], repo: 'widgets' }));
    expect(await options(['unlock', '--repo', 'widgets', '--all'])).toEqual(one({ names: [], repo: 'widgets', all: true }));
  });

  it('several migration ids with --all, or every migration of an --output-dir', async () => {
    expect(await options(['unlock', '1', '2', '3', '--all'])).toEqual({ kind: 'many', ids: [1, 2, 3] });
    expect(await options(['unlock', '7', '7', '--all'])).toEqual({ kind: 'many', ids: [7] });
    expect(await options(['unlock', '--output-dir', 'backup'])).toEqual({ kind: 'output-dir', dir: 'backup' });
    expect(await options(['unlock', '--output-dir', 'backup', '--all'])).toEqual({ kind: 'output-dir', dir: 'backup' });
    await refused(['unlock', '1', '0', '--all'], /a migration id is a positive integer, not "0"/);
    const alone = '--output-dir unlocks what the export in that directory locked: give no migration id, repository or --repo with it';
    await refused(['unlock', '4242', '--output-dir', 'backup'], alone);
    await refused(['unlock', '--repo', 'widgets', '--output-dir', 'backup'], alone);
    await refused(['unlock', '--output-dir', ''], /--output-dir is empty/);
  });

  it('needs a migration, and repositories or --all', async () => {
    await refused(['unlock'], 'give a migration id, or --repo <name> to find it');
    await refused(['unlock', '4242'], 'name the repositories to unlock, or pass --all');
    await refused(['unlock', 'widgets'], /a migration id is a positive integer, not "widgets"/);
  });

  it('--all with names is refused, the hint with the flags this run reached the service with', async () => {
    await refused(['unlock', '4242', '--all', 'widgets'], '--all unlocks every repository of migration 4242; do not also name widgets',
      'run `svc-migrate unlock 4242 --all`, or name the repositories without --all');
    await refused(['unlock', '4242', '--all', '--repo', 'widgets', '--org', 'acme', '--base-url', 'https://api.example.com'], /do not also name widgets/,
      'run `svc-migrate unlock 4242 --all --base-url https://api.example.com --org acme`, or name the repositories without --all');
  });
});

describe('export', () => {
  it('defaults: one archive, checked and verified, waiting as long as it takes', async () => {
    expect(await options(['export', 'widgets'])).toEqual({ args: ['widgets'], flags: { checksum: true, verify: true }, wait: {} });
  });

  it('start, download and wait flags together', async () => {
    expect(await options(['export', 'widgets', '--lock', '--unlock', '--delete-archive', '--yes', '-o', 'a.tgz', '--interval', '1', '--timeout', '3h'])).toEqual({
      args: ['widgets'],
      flags: { lock: true, unlock: true, deleteArchive: true, yes: true, output: 'a.tgz', checksum: true, verify: true, interval: 1, timeout: '3h' },
      wait: { intervalMs: 1000, timeoutMs: 10_800_000 },
    });
  });

  it('--new starts a fresh migration; it does not go with --output-dir, whose journal says what is done', async () => {
    expect(await options(['export', 'widgets', '--new'])).toMatchObject({ flags: { new: true } });
    await refused(['export', 'widgets', '--new', '--output-dir', 'out'], '--new goes without --output-dir',
      'with --output-dir the journal says what is done; --restart plans the export anew');
  });

  it('a --timeout that is no duration is refused before a repository is locked', async () => {
    await refused(['export', 'widgets', '--lock', '--timeout', 'tomorrow'], /--timeout takes a duration such as 30s, 5m, 90m or 2h, not "tomorrow"/);
  });

  it('refuses what could never release a verified archive', async () => {
    const byHand = 'or unlock and delete-archive by hand after `svc-migrate archive verify <file>`';
    await refused(['export', 'widgets', '-o', '-', '--delete-archive', '--yes'], '--delete-archive needs the archive saved to a file, not -o -');
    await refused(['export', 'widgets', '-o', '-', '--unlock'], '--unlock needs a verified archive: save it to a file, not -o -', byHand);
    await refused(['export', 'widgets', '--no-verify', '--unlock'], '--unlock needs a verified archive: drop --no-verify', byHand);
    await refused(['export', 'widgets', '--no-verify', '--delete-archive', '--yes'], '--delete-archive needs a verified archive: drop --no-verify', byHand);
    expect(await options(['export', 'widgets', '--no-verify'])).toMatchObject({ flags: { verify: false } });
    expect(await options(['export', 'widgets', '-o', '-'])).toMatchObject({ flags: { output: '-' } });
  });

  it('-o: empty, or stdout on a terminal, refused', async () => {
    await refused(['export', 'widgets', '-o', ''], '-o/--output is empty');
    // `--output-dir "$UNSET"` would export into the current directory.
    await refused(['export', 'widgets', '--output-dir', ''], '--output-dir is empty');
    await refused(['export', 'widgets', '--repos-file', ''], '--repos-file is empty', 'name a file of repositories, or - for stdin');
    await refused(['start', 'widgets', '--repos-file', ''], '--repos-file is empty');
    await refused(['export', 'widgets', '-o', '-'], /stdout is a terminal/, 'pipe it (`… -o - | tar -tz`), or save it with -o FILE', { stdoutIsTTY: true });
  });

  it('--delete-archive: --yes, or a terminal to ask on', async () => {
    await refused(['export', 'widgets', '--delete-archive'], 'confirmation is required', `pass --yes ${NO_PROMPT}`);
    expect(await options(['export', 'widgets', '--delete-archive'], { stdinIsTTY: true })).toMatchObject({ flags: { deleteArchive: true } });
  });

  it('without a repository: asks on a terminal; the sandbox exports a few of its own; otherwise refused', async () => {
    await refused(['export'], 'at least one repository is required', `pass repository names or --repos-file ${NO_PROMPT}`);
    await refused(['export', '--output-dir', 'out'], 'at least one repository is required');
    expect(await options(['export'], { stdinIsTTY: true })).toMatchObject({ args: [] });
    expect(await options(['export', '--sandbox', '--yes'])).toMatchObject({ args: [] });
  });

  it('--output-dir with its batch flags', async () => {
    expect(await options(['export', '--repos-file', 'all.txt', '--output-dir', 'backup', '--batch-size', '50', '--parallel', '4', '--restart', '--dry-run'])).toMatchObject({
      flags: { reposFile: 'all.txt', outputDir: 'backup', batchSize: 50, parallel: 4, restart: true, dryRun: true },
    });
    await refused(['export', 'widgets', '--output-dir', 'out', '--batch-size', '0'], /expected a positive integer, not "0"/);
    await refused(['export', 'widgets', '--output-dir', 'out', '--parallel', 'many'], /expected a positive integer, not "many"/);
  });

  it.each([['--batch-size', '10'], ['--parallel', '2'], ['--restart'], ['--dry-run']])('%s without --output-dir is refused', async (...flag) => {
    await refused(['export', 'widgets', ...flag], '--batch-size, --parallel, --restart and --dry-run go with --output-dir');
  });

  it('--output-dir refuses -o, and releasing what is not verified', async () => {
    await refused(['export', 'widgets', '--output-dir', 'out', '-o', 'a.tgz'], '--output and --output-dir do not go together',
      'with --output-dir every batch is saved as DIR/migration-<id>.tar.gz');
    await refused(['export', 'widgets', '--output-dir', 'out', '--no-verify', '--delete-archive', '--yes'], '--delete-archive needs a verified archive: drop --no-verify',
      'export with --no-verify alone, check each archive with `svc-migrate archive verify out/migration-<id>.tar.gz`, then `svc-migrate delete-archive <id>` for each, and `svc-migrate unlock --output-dir out` gives back every repository the export locked');
  });

  it('--output-dir --delete-archive asks as export does, except for a --dry-run', async () => {
    await refused(['export', 'widgets', '--output-dir', 'out', '--delete-archive'], 'confirmation is required');
    expect(await options(['export', 'widgets', '--output-dir', 'out', '--delete-archive', '--dry-run'])).toMatchObject({ flags: { deleteArchive: true, dryRun: true } });
  });
});
