import { resolve } from 'node:path';
import type { Writable } from 'node:stream';
import type { Context } from '../../context.js';
import { fingerprintOf } from '../../core/org-export/journal.js';
import { DEFAULT_BATCH_SIZE, DEFAULT_PARALLEL, type OrgExportResult, runOrgExport } from '../../core/org-export/run.js';
import { CliError, UsageError } from '../../errors.js';
import { createOrgExportReporter, orgExportFooter, orgExportTable } from '../../ui/org-export.js';
import { confirmDeletion } from './confirm.js';
import type { DownloadFlags } from './download.js';
import { collectRepositories, type StartFlags, startBody, startFlagsOf, type WaitFlags, waitSettings } from './flags.js';

/** The flags of `export`, with or without --output-dir. */
export interface ExportOptions extends StartFlags, DownloadFlags, WaitFlags {
  unlock?: boolean;
  deleteArchive?: boolean;
  yes?: boolean;
}

export interface OrgExportFlags {
  outputDir?: string;
  batchSize?: number;
  parallel?: number;
  restart?: boolean;
}

/** `export --output-dir`: the whole list as batches, in parallel, resumable from the journal in the directory. */
export async function exportOrganization(
  context: Context,
  args: string[],
  options: ExportOptions & OrgExportFlags,
): Promise<OrgExportResult> {
  const dir = options.outputDir as string;
  if (options.output !== undefined) {
    throw new UsageError('--output and --output-dir do not go together', {
      hint: 'with --output-dir every batch is saved as DIR/migration-<id>.tar.gz',
    });
  }
  if ((options.unlock || options.deleteArchive) && options.verify === false) {
    throw new UsageError(`${options.unlock ? '--unlock' : '--delete-archive'} needs a verified archive: drop --no-verify`);
  }
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const parallel = options.parallel ?? DEFAULT_PARALLEL;
  const { repositories } = await collectRepositories(context, args, options);
  if (repositories.length === 0) {
    throw new UsageError('no repositories to export', { hint: 'give them with --repos-file FILE or as arguments' });
  }
  const { repositories: _names, ...body } = startBody(repositories, options);
  if (options.deleteArchive) {
    await confirmDeletion(
      context,
      'Delete each archive from the service once it is saved and verified?',
      options.yes,
    );
  }
  const org = context.org();
  const flags = {
    unlock: Boolean(options.unlock),
    deleteArchive: Boolean(options.deleteArchive),
    checksum: options.checksum !== false,
    verify: options.verify !== false,
  };
  // What decides the plan and what is done to the service; pace and display flags may change between runs.
  const fingerprint = fingerprintOf({ org, repositories, batchSize, body, ...flags });
  const command = [
    'export',
    ...(options.reposFile ? ['--repos-file', options.reposFile] : args),
    '--batch-size',
    String(batchSize),
    '--output-dir',
    dir,
    ...startFlagsOf(body),
    ...(flags.unlock ? ['--unlock'] : []),
    ...(flags.deleteArchive ? ['--delete-archive'] : []),
    ...(flags.checksum ? [] : ['--no-checksum']),
    ...(flags.verify ? [] : ['--no-verify']),
  ].join(' ');

  const client = await context.api();
  const reporter = createOrgExportReporter(context.out, context.io.stderr as Writable & { columns?: number });
  let result: OrgExportResult;
  try {
    result = await runOrgExport(client, {
      org,
      dir: resolve(dir),
      repositories,
      batchSize,
      parallel,
      body,
      ...flags,
      fingerprint,
      command,
      restart: Boolean(options.restart),
      ...waitSettings(options),
      clock: context.clock,
      signal: context.signal,
      onEvent: (event) => reporter.onEvent(event),
    });
  } finally {
    reporter.stop();
  }
  const summary = {
    type: 'summary',
    ok: result.exitCode === 0,
    exit_code: result.exitCode,
    repositories: result.repositories,
    verified_repositories: result.verifiedRepositories,
    journal: result.journalPath,
    batches: result.batches.map((batch) => ({
      batch: batch.index,
      repositories: batch.repositories.length,
      state: batch.state,
      migration_ids: batch.migrationIds,
      ...(batch.archive ? { archive: batch.archive } : {}),
      ...(batch.error ? { error: batch.error } : {}),
    })),
    poll_requests: result.pollRequests,
  };
  const { layout } = context.out;
  context.out.line(summary, () => orgExportTable(result, context.out.theme, layout));
  if (layout.plain && !context.out.json) context.out.info(orgExportFooter(result));
  if (result.exitCode !== 0) {
    const failed = result.batches.filter((b) => b.error || b.state !== 'done').map((b) => b.index);
    const unverified = result.repositories - result.verifiedRepositories;
    throw new CliError(
      unverified > 0
        ? `${unverified} of ${result.repositories} repositories are not in a verified archive (batch ${failed.join(', ')})`
        : `all ${result.repositories} repositories are in verified archives, but batch ${failed.join(', ')} stopped before its last step`,
      result.exitCode as CliError['exitCode'],
      { hint: `the journal ${result.journalPath} says where each batch stopped; run the same command again to continue` },
    );
  }
  return result;
}
