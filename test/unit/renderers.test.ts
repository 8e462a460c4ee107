import { readFileSync } from 'node:fs';
import { Chalk } from 'chalk';
import { describe, expect, it } from 'vitest';
import type { Migration, Repository } from '../../src/api/types.js';
import { formatBytes, formatDuration, formatTime } from '../../src/ui/format.js';
import { sandboxBanner } from '../../src/ui/sandbox.js';
import {
  downloadMessage,
  migrationSummary,
  migrationsTable,
  renderTable,
  repositoriesTable,
  startedMessage,
  unlockMessage,
} from '../../src/ui/tables.js';
import { eventsTable } from '../../src/ui/webhook.js';
import { CATALOGUE } from '../../src/webhook/catalogue.js';

// The renderers with colour off, on the service's published example bodies: a change to what a user
// reads shows up here as a snapshot diff to look at, not as a surprise in docs/cli.md.
const plain = new Chalk({ level: 0 });
const example = <T>(name: string, status: string): T =>
  (JSON.parse(readFileSync(new URL(`../fixtures/api/${name}.json`, import.meta.url), 'utf8')) as { responses: Record<string, T> }).responses[status]!;

describe('renderers, colour off', () => {
  const migrations = example<Migration[]>('list-for-org', '200');
  const migration = example<Migration>('get-status-for-org', '200');

  it('never cuts a header: it wraps at its spaces, and a column too narrow for a word of it is left out', () => {
    const head = ['NAME', 'PULL REQUESTS', 'ISSUE COMMENTS', 'MILESTONES'];
    const rows = [['octo-org/widgets', '2', '14', '1']];
    const fits = (width: number) => renderTable(head, rows, plain, { plain: false, width }, [{ rank: 9 }, {}, {}, {}]);
    expect(fits(80)).toBe(['NAME              PULL REQUESTS  ISSUE COMMENTS  MILESTONES', 'octo-org/widgets  2              14              1'].join('\n'));
    expect(fits(50)).toBe(['NAME              PULL       ISSUE      MILESTONES', '                  REQUESTS   COMMENTS', 'octo-org/widgets  2          14         1'].join('\n'));
    // Too narrow for MILESTONES: left out rather than cut to `MILE…`.
    expect(fits(40)).toBe(['NAME              PULL        ISSUE', '                  REQUESTS    COMMENTS', 'octo-org/widgets  2           14'].join('\n'));
    for (const width of [80, 50, 40, 30, 20]) expect(fits(width)).not.toContain('…');
  });

  it('measures a cell in terminal columns: a CJK character takes two, a combining accent none', () => {
    const rows = [['acme/日本', 'private'], ['acme/cafe\u0301', 'public'], ['acme/web', 'public']];
    expect(renderTable(['NAME', 'VISIBILITY'], rows, plain, { plain: false, width: 80 })).toBe(
      ['NAME       VISIBILITY', 'acme/日本  private', 'acme/cafe\u0301  public', 'acme/web   public'].join('\n'),
    );
    // Cut to the terminal's 8 columns: three characters of two, then the `…`; never half of one.
    expect(renderTable(['NAME'], [['日本語のリポジトリ']], plain, { plain: false, width: 8 })).toBe('NAME\n日本語…');
  });

  it('draws a long table as one: one header, every row on its line, the columns aligned throughout', () => {
    const rows = Array.from({ length: 250 }, (_, n) => [`acme/repo-${n}`, n % 2 ? 'private' : 'public']);
    const lines = renderTable(['NAME', 'VISIBILITY'], rows, plain, { plain: false, width: 80 }).split('\n');
    expect(lines).toHaveLength(251);
    expect(lines[0]).toBe('NAME           VISIBILITY');
    expect(lines.slice(1).map((line) => line.lastIndexOf(' ') + 1)).toEqual(rows.map(() => 15));
  });

  it('draws the list of migrations, and says when there is none', () => {
    expect(migrationsTable(migrations, plain)).toMatchSnapshot();
    expect(migrationsTable(migrations, plain, true)).toMatchSnapshot();
    expect(migrationsTable([], plain)).toBe('no migrations');
  });

  it('summarises one migration and the start of one', () => {
    expect(migrationSummary(migration, plain)).toMatchSnapshot();
    expect(startedMessage(example<Migration>('start-for-org', '201'), plain)).toMatchSnapshot();
  });

  it('draws the repositories of a migration', () => {
    expect(repositoriesTable(example<Repository[]>('list-repos-for-org', '200'), plain)).toMatchSnapshot();
  });

  it('reports downloads and unlocks', () => {
    expect(downloadMessage({ migration_id: 79, path: 'migration-79.tar.gz', bytes: 3_456_789, sha256: 'ab'.repeat(32) })).toMatchSnapshot();
    expect(unlockMessage([{ repository: 'widgets', ok: true }, { repository: 'gone', ok: false, error: 'not locked' }], plain)).toMatchSnapshot();
    expect(unlockMessage([], plain)).toBe('nothing to unlock');
  });

  it('lists the webhook events and shows the sandbox banner', () => {
    expect(eventsTable([...CATALOGUE.values()].slice(0, 5), plain)).toMatchSnapshot();
    expect(
      sandboxBanner(
        {
          base_url: 'http://127.0.0.1:4010',
          storage_origin: 'http://localhost:4011',
          org: 'octo-org',
          token: 'svc_owner',
          tokens: [{ token: 'svc_owner', kind: 'classic', user: 'octocat', revoked: false, label: 'owner' }],
        },
        plain,
      ),
    ).toMatchSnapshot();
  });

  it('formats times in UTC, sizes in binary units and durations briefly', () => {
    expect(formatTime('2026-03-10T12:00:00+02:00')).toBe('2026-03-10 10:00Z');
    expect(formatTime('not a time')).toBe('not a time');
    expect([0, 1023, 1024, 5 * 1024 ** 3].map(formatBytes)).toEqual(['0 B', '1023 B', '1.0 KiB', '5.0 GiB']);
    expect([4000, 95_000, 3_725_000].map(formatDuration)).toEqual(['4s', '1m35s', '1h02m']);
  });
});
