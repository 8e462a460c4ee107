import { createRequire } from 'node:module';
import type { ChalkInstance } from 'chalk';
import type CliTable from 'cli-table3';
import type { Migration, Repository } from '../api/types.js';
import { formatBytes, formatState, formatTime } from './format.js';

// Loaded on first use so `--help` and `--version` never pay for it.
const require = createRequire(import.meta.url);

export function renderTable(head: string[], rows: string[][], theme: ChalkInstance): string {
  const Table = require('cli-table3') as typeof CliTable;
  const table = new Table({
    head: head.map((title) => theme.bold(title)),
    style: { head: [], border: [] },
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
  });
  table.push(...rows);
  return table.toString();
}

function repositoryNames(migration: Migration, excluded: boolean, theme: ChalkInstance): string {
  if (excluded) return '-';
  // docs/service.md#migration: only exports carry repositories; an import (not startable through the API) has none.
  if (!('repositories' in migration)) return theme.dim('(import)');
  const names = migration.repositories?.map((repo) => repo.full_name) ?? [];
  if (names.length <= 3) return names.join(', ');
  return `${names.slice(0, 3).join(', ')} +${names.length - 3}`;
}

/** docs/cli.md `list`: ID, STATE, REPOSITORIES, LOCKED, CREATED, UPDATED. */
export function migrationsTable(migrations: Migration[], theme: ChalkInstance, repositoriesExcluded = false): string {
  if (migrations.length === 0) return 'no migrations';
  return renderTable(
    ['ID', 'STATE', 'REPOSITORIES', 'LOCKED', 'CREATED', 'UPDATED'],
    migrations.map((m) => [
      String(m.id),
      formatState(m.state, theme),
      repositoryNames(m, repositoriesExcluded, theme),
      m.lock_repositories ? 'yes' : 'no',
      formatTime(m.created_at),
      formatTime(m.updated_at),
    ]),
    theme,
  );
}

export function migrationSummary(migration: Migration, theme: ChalkInstance): string {
  const lines = [
    `migration ${migration.id}  ${formatState(migration.state, theme)}`,
    `  guid          ${migration.guid}`,
    `  organization  ${migration.owner.login}`,
    `  locked        ${migration.lock_repositories ? 'yes' : 'no'}`,
    `  created       ${formatTime(migration.created_at)}`,
    `  updated       ${formatTime(migration.updated_at)}`,
  ];
  if (migration.repositories)
    lines.push(`  repositories  ${migration.repositories.map((r) => r.full_name).join(', ')}`);
  return lines.join('\n');
}

export function repositoriesTable(repositories: Repository[], theme: ChalkInstance): string {
  if (repositories.length === 0) return 'no repositories';
  return renderTable(
    ['NAME', 'VISIBILITY', 'DEFAULT BRANCH', 'SIZE (KB)', 'ARCHIVED', 'PUSHED'],
    repositories.map((r) => [
      r.full_name,
      r.visibility,
      r.default_branch,
      String(r.size),
      r.archived ? 'yes' : 'no',
      formatTime(r.pushed_at),
    ]),
    theme,
  );
}

/** After `start`: the id, the state and what to run next. */
export function startedMessage(migration: Migration, theme: ChalkInstance): string {
  return [
    `started migration ${theme.bold(String(migration.id))} (${formatState(migration.state, theme)})`,
    `next: svc-migrate status ${migration.id} --wait`,
  ].join('\n');
}

export interface DownloadSummary {
  migration_id: number;
  path: string;
  bytes: number;
  sha256?: string;
  /** Passed `archive verify` before taking its final name. */
  verified?: boolean;
  /** `<archive>.sha256` written beside it. */
  sha256_file?: string;
}

export function downloadMessage(summary: DownloadSummary): string {
  const lines = [`saved ${summary.path} (${formatBytes(summary.bytes)}, ${summary.bytes} bytes)`];
  if (summary.sha256) lines.push(`sha256 ${summary.sha256}${summary.sha256_file ? ` (in ${summary.sha256_file})` : ''}`);
  if (summary.verified) lines.push('verified with `archive verify` before it took its name');
  return lines.join('\n');
}

export function unlockMessage(
  outcomes: { repository: string; ok: boolean; error?: string }[],
  theme: ChalkInstance,
): string {
  if (outcomes.length === 0) return 'nothing to unlock';
  return outcomes
    .map((o) =>
      o.ok ? `${theme.green('✓')} unlocked ${o.repository}` : `${theme.red('✗')} ${o.repository}: ${o.error}`,
    )
    .join('\n');
}
