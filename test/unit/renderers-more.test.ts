import { Chalk } from 'chalk';
import { describe, expect, it } from 'vitest';
import type { Migration } from '../../src/api/types.js';
import type { InspectReport } from '../../src/core/archive/inspect.js';
import type { VerifyReport } from '../../src/core/archive/verify.js';
import type { OrgExportResult } from '../../src/core/org-export/run.js';
import { inspectMessage, inspectNotes, verifyMessage } from '../../src/ui/archive.js';
import { type AuthStatus, authStatusLines, tokenHint } from '../../src/ui/auth.js';
import { orgExportFooter, orgExportTable } from '../../src/ui/org-export.js';
import { Output } from '../../src/ui/output.js';
import { migrationSummary, migrationsTable, repositoriesTable, unlockMessage } from '../../src/ui/tables.js';
import type { Repository } from '../../src/api/types.js';
import { createWaitReporter } from '../../src/ui/wait.js';
import { deliveryLine, rejectionLine } from '../../src/ui/webhook.js';
import type { ReceivedDelivery } from '../../src/webhook/receiver.js';

// The renderers of archives, org exports, deliveries, auth status and waits, colour off: what a
// user reads, as snapshots to look at when it changes. Text from outside is drawn inert.
const plain = new Chalk({ level: 0 });
const ESC = '\u001b';

describe('archive reports', () => {
  const verified: VerifyReport = {
    path: 'migration-79.tar.gz',
    ok: true,
    bytes: 3_456_789,
    entries: 42,
    metadata_files: 7,
    repositories: [{ name: 'octo-org/widgets', git_data: true, objects: 'pack', git_check: 'passed' }],
    git_check: 'passed',
    sha256: { expected: 'ab'.repeat(32), actual: 'ab'.repeat(32) },
    migration_id: 79,
    problems: [],
    notes: ['git data of octo-org/docs excluded at export'],
  };

  it('says an archive is intact, and what was checked', () => {
    expect(verifyMessage(verified, plain)).toMatchSnapshot();
  });

  it('lists each problem of a failed one, with names from the archive escaped', () => {
    const failed: VerifyReport = {
      ...verified,
      ok: false,
      git_check: 'skipped: git is not on PATH',
      problems: [
        { repository: 'octo-org/widgets', file: 'objects/pack/x.pack', message: 'truncated' },
        { message: `a member named evil${ESC}]0;title\u0007` },
      ],
    };
    const text = verifyMessage(failed, plain);
    expect(text).not.toContain(ESC);
    expect(text).toMatchSnapshot();
  });

  it('names the empty repositories, the first 20 of them', () => {
    const empty = (count: number): VerifyReport => ({
      ...verified,
      repositories: Array.from({ length: count }, (_, i) => ({ name: `octo-org/e${i}`, git_data: true, objects: 'none', empty: true, git_check: 'passed' })),
    });
    expect(verifyMessage(empty(2), plain)).toMatchSnapshot();
    expect(verifyMessage(empty(22), plain).split('\n')[1]).toBe(`  22 empty repositories (no branch or tag): ${Array.from({ length: 20 }, (_, i) => `octo-org/e${i}`).join(', ')} and 2 more`);
  });

  it('draws what an archive holds', () => {
    const report: InspectReport = {
      path: 'migration-79.tar.gz',
      bytes: 3_456_789,
      complete: true,
      organizations: ['octo-org'],
      repositories: [
        { name: 'octo-org/widgets', refs: { 'refs/heads/main': 'a'.repeat(40), 'refs/tags/v1': 'b'.repeat(40) }, git_bytes: 123_456, counts: { issues: 3, pull_requests: 2 } },
        { name: 'octo-org/docs', refs: {}, git_bytes: 0, counts: { issues: 1 } },
      ],
      metadata: [{ file: 'issues_000001.json', kind: 'issues', records: 4 }],
      problems: [],
    };
    expect(inspectMessage(report, plain)).toMatchSnapshot();
    expect(inspectMessage({ ...report, repositories: [], complete: false, problems: [{ message: 'cut short' }] }, plain)).toMatchSnapshot();
  });

  it('names a kind of record as the archive does, its invisible characters shown', () => {
    // The name check refuses controls in a metadata file's name; a soft hyphen or a tag passes it.
    const report: InspectReport = {
      path: 'a.tar.gz',
      bytes: 1,
      complete: true,
      organizations: [],
      repositories: [{ name: 'octo-org/w', refs: {}, git_bytes: 0, counts: { 'is\u00adsues\u{e0041}': 1 } }],
      metadata: [],
      problems: [],
    };
    for (const layout of [{ plain: false }, { plain: true }]) {
      const text = [inspectMessage(report, plain, layout), ...inspectNotes(report, plain, layout.plain).after].join('\n');
      expect(text).not.toMatch(/[\u00ad\u{e0041}]/u);
    }
    expect(inspectNotes(report, plain, true).after).toContain('columns: REPOSITORY, REFS, GIT DATA, IS\\xadSUES\\u{e0041}');
  });
});

describe('org export', () => {
  const result: OrgExportResult = {
    journalPath: 'backup/svc-migrate-journal.json',
    repositories: 5,
    verifiedRepositories: 3,
    archivedRepositories: 3,
    skipped: [],
    verify: true,
    exitCode: 9,
    pollRequests: 12,
    batches: [
      { index: 1, repositories: ['a', 'b', 'c'], state: 'done', migrationIds: [101], attempts: 1, archive: { path: 'backup/migration-101.tar.gz', bytes: 2_000_000, verified: true } },
      { index: 2, repositories: ['d', 'e'], state: 'downloaded', migrationIds: [102], attempts: 1, error: { message: `check failed${ESC}[2J`, exitCode: 9 } },
    ],
  };

  it('draws the batches as a table with the footer, or as plain rows, and names where to look', () => {
    expect(orgExportTable(result, plain, { plain: false, width: 100 })).toMatchSnapshot();
    expect(orgExportTable(result, plain, { plain: true })).toMatchSnapshot();
    expect(orgExportTable(result, plain, { plain: true })).not.toContain(ESC);
    // At 40 columns the table still says which archive holds each batch.
    const narrow = orgExportTable(result, plain, { plain: false, width: 40 }).split('\n');
    expect(narrow[0]).toMatch(/^BATCH {2}MIGRATION {2}STATE/);
    expect(narrow.slice(0, result.batches.length + 1).every((line) => line.length <= 40)).toBe(true);
    expect(orgExportFooter(result)).toBe('3/5 repositories in verified archives; look at batch 2 in backup/svc-migrate-journal.json, then run the same command again');
    expect(orgExportFooter({ ...result, verifiedRepositories: 5, batches: result.batches.slice(0, 1) })).toBe('5/5 repositories in verified archives');
  });

  it('lists the repositories the service refused, with its reason, inert, and says when nothing was verified', () => {
    const skipped = Array.from({ length: 22 }, (_, i) => ({ batch: 2, name: `octo-org/gone-${i}`, reason: `octo-org/gone-${i} is not a repository of octo-org${ESC}[2J` }));
    const footer = orgExportFooter({ ...result, repositories: 25, verifiedRepositories: 3, skipped, batches: result.batches.slice(0, 1) });
    expect(footer.split('\n')[1]).toBe('skipped 22 repositories the service refused:');
    expect(footer).toContain('  octo-org/gone-0 (batch 2): octo-org/gone-0 is not a repository of octo-org\\x1b[2J');
    expect(footer).toContain('  … and 2 more (each with its reason in the journal and in --json)');
    expect(footer).not.toContain(ESC);
    const unchecked = { ...result, verifiedRepositories: 0, archivedRepositories: 5, verify: false, batches: result.batches.slice(0, 1) };
    expect(orgExportFooter(unchecked)).toBe('5/5 repositories in archives, none verified (--no-verify)');
  });

  it('sends no one to a narrowed batch, and names a repository at fault as such', () => {
    const reason = 'its migration failed on the service with this repository alone (migration 104, tried 2 times)';
    const narrowed: OrgExportResult = {
      ...result,
      repositories: 4,
      exitCode: 10,
      skipped: [{ batch: 3, name: 'octo-org/will-fail', reason, migrationId: 104 }],
      batches: [
        { index: 1, repositories: ['a', 'will-fail'], state: 'narrowed', migrationIds: [101], attempts: 1, released: true },
        { index: 2, repositories: ['a'], state: 'done', migrationIds: [102], attempts: 1, archive: { path: 'backup/migration-102.tar.gz', bytes: 2_000, verified: true } },
        {
          index: 3, repositories: [], state: 'skipped', migrationIds: [103, 104], attempts: 2,
          skipped: [{ name: 'octo-org/will-fail', reason, migrationId: 104 }],
        },
      ],
    };
    expect(orgExportFooter(narrowed).split('\n')).toEqual([
      '3/4 repositories in verified archives',
      'skipped 1 repository the service refused or could not export:',
      `  octo-org/will-fail (batch 3): ${reason}`,
    ]);
    const rows = orgExportTable(narrowed, plain, { plain: true }).split('\n').map((row) => row.split('\t'));
    expect(rows.map((row) => row.at(-1))).toEqual(['', '', 'skipped 1 at fault: octo-org/will-fail']);
    // The skipped batch held its one repository: not "0".
    expect(rows.map((row) => row[1])).toEqual(['2', '1', '1']);
    // Its headers as every other table's.
    expect(orgExportTable(narrowed, plain, { plain: false, width: 100 }).split('\n')[0]).toMatch(/^BATCH {2}REPOS {2}MIGRATION {2}STATE/);
  });
});

describe('webhook lines', () => {
  const delivery = (overrides: Partial<ReceivedDelivery> = {}): ReceivedDelivery => ({
    sequence: 1,
    receivedAt: '2026-11-24T10:11:12.000Z',
    id: '8f2c0000-0000-4000-8000-000000000001',
    event: 'pull_request',
    action: 'opened',
    hookId: '1',
    repository: 'octo-org/widgets',
    contentType: 'json',
    method: 'POST',
    path: '/',
    rawHeaders: () => [],
    headers: {},
    rawBody: Buffer.alloc(0),
    payloadText: () => '{}',
    verification: { verified: true, algorithm: 'sha256', legacy: false, secret: 2 },
    warnings: [],
    duplicate: false,
    ping: false,
    ...overrides,
  });

  it('draws a delivery: verified or not, a redelivery, a ping, its warnings, and nothing from it that drives the terminal', () => {
    expect(deliveryLine(delivery(), plain, 1)).toBe('10:11:12  pull_request.opened  octo-org/widgets  8f2c0000-0000-4000-8000-000000000001  verified sha256');
    expect(deliveryLine(delivery(), plain, 2)).toMatch(/verified sha256 \(secret #2\)$/);
    expect(deliveryLine(delivery({ verification: { verified: false }, duplicate: true, warnings: ['missing required number'] }), plain, 0)).toMatchSnapshot();
    expect(deliveryLine(delivery({ ping: true, event: 'ping', action: undefined, repository: undefined }), plain, 1)).toMatchSnapshot();
    const hostile = deliveryLine(delivery({ action: `x${ESC}]0;pwned\u0007`, repository: `${ESC}[2Jrepo` }), plain, 1);
    expect(hostile).not.toContain(ESC);
    expect(hostile).toMatchSnapshot();
  });

  it('draws a rejection on one inert line', () => {
    const line = rejectionLine({ receivedAt: '', status: 401, reason: 'signature does not match', method: 'POST', path: `/x${ESC}[2J`, id: 'abc', event: 'push', rawHeaders: [], answer: '{}' });
    expect(line).toBe('rejected 401 POST /x\\x1b[2J push abc: signature does not match');
  });
});

describe('auth status', () => {
  const status: AuthStatus = {
    logged_in: true,
    source: 'config',
    token: tokenHint('svc_0123456789'),
    base_url: { value: 'https://api.example.com', source: 'env' },
    org: { value: 'acme', source: 'flag' },
    check: { result: 'valid', message: 'owner access to acme\'s migrations' },
    config: '/home/me/.config/svc-migrate/config.json',
  };

  it('says where each setting comes from and what the check said, never the whole token', () => {
    expect(authStatusLines(status, plain)).toMatchSnapshot();
    expect(authStatusLines({ ...status, logged_in: false, source: null, token: null, check: { result: 'skipped', message: 'not checked: no token' } }, plain)).toMatchSnapshot();
    expect(tokenHint('short')).toBe('****');
  });
});

describe('waiting, off a terminal', () => {
  it('prints one line per change of state', async () => {
    let stderr = '';
    const stderrStream = { write: (text: string) => ((stderr += text), true) };
    const out = new Output({ json: false, quiet: false, color: false, stdout: { write: () => true }, stderr: stderrStream });
    const reporter = await createWaitReporter(out, [79]);
    const migration = { id: 79 } as Migration;
    reporter.onEvent({ id: 79, state: 'exporting', previous: 'pending', migration, elapsedMs: 4000, finished: false });
    reporter.onEvent({ id: 79, state: 'exported', previous: 'exporting', migration, elapsedMs: 95_000, finished: true });
    reporter.onNotice('rate limited: waiting 30s');
    reporter.stop();
    expect(stderr).toBe('migration 79: pending → exporting (4s)\nmigration 79: exporting → exported (1m35s)\nwarning: rate limited: waiting 30s\n');
  });
});

describe('what the service says, drawn inert', () => {
  // A hostile or broken service (or a proxy in front of it) chooses these strings: an OSC that sets
  // the window's title, a CSI, a C1 CSI, a bidi override and a line break that forges a line.
  const evil = `w${ESC}]0;PWNED\u0007id${ESC}[2Jgets\u009b31m\u202e\nforged: ok`;
  const inert = 'w\\x1b]0;PWNED\\x07id\\x1b[2Jgets\\x9b31m\\u202e\\x0aforged: ok';
  const repository = {
    full_name: `acme/${evil}`,
    visibility: evil,
    default_branch: evil,
    size: 1,
    archived: false,
    pushed_at: evil,
  } as unknown as Repository;
  const migration = {
    id: 7,
    guid: evil,
    state: evil,
    lock_repositories: true,
    owner: { login: evil },
    repositories: [repository],
    created_at: evil,
    updated_at: evil,
  } as unknown as Migration;
  const raw = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/;
  const wide = { plain: false, width: 400 };
  const narrow = { plain: false, width: 40 };
  const pipe = { plain: true };

  it.each([
    ['the list of migrations', () => [pipe, wide, narrow].map((layout) => migrationsTable([migration], plain, false, layout))],
    ['a migration', () => [migrationSummary(migration, plain)]],
    ['the repositories of a migration', () => [pipe, wide, narrow].map((layout) => repositoriesTable([repository], plain, layout))],
    ['an unlock the service refused', () => [unlockMessage([{ repository: evil, ok: false, error: `forbidden: ${evil}` }], plain)]],
    ['a token the service refused', () => [authStatusLines({ ...status(), check: { result: 'rejected', message: `401: ${evil}` } }, plain)]],
  ])('%s: no control, C1 or bidi character, and no line the service forged', (_, draw) => {
    for (const text of draw()) {
      expect(text).not.toMatch(raw);
      expect(text).not.toMatch(/^forged/m);
    }
  });

  it('a migration summary shows the service\'s words escaped, as the archive check does', () => {
    expect(migrationSummary(migration, plain)).toContain(`organization    ${inert}`);
  });

  it('a wait shows the state and the notices it was given escaped', async () => {
    let stderr = '';
    const stderrStream = { write: (text: string) => ((stderr += text), true) };
    const out = new Output({ json: false, quiet: false, color: false, stdout: { write: () => true }, stderr: stderrStream });
    const reporter = await createWaitReporter(out, [7]);
    reporter.onEvent({ id: 7, state: evil as Migration['state'], previous: 'pending', migration, elapsedMs: 4000, finished: true });
    reporter.onNotice(`could not check migration 7 (${evil}); trying again`);
    reporter.stop();
    expect(stderr).not.toMatch(raw);
    expect(stderr.split('\n').filter(Boolean)).toHaveLength(2);
    expect(stderr).toContain(`migration 7: pending → ${inert} (4s)`);
  });
});

function status(): AuthStatus {
  return {
    logged_in: true,
    source: 'flag',
    token: '****',
    base_url: { value: 'https://api.example.com', source: 'flag' },
    org: { value: 'acme', source: 'flag' },
    check: { result: 'valid', message: '' },
    config: '/home/me/.config/svc-migrate/config.json',
  };
}
