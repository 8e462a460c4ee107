import { basename, join } from 'node:path';
import { replaceFile } from '../exclusive-files.js';
import { type BatchRecord, type Journal, journalError } from './journal.js';

// What is where in an export's directory, for its owner: DIR/manifest.json and DIR/manifest.tsv,
// one entry per repository in an archive on disk (docs/cli.md#manifest). Both are made from the
// journal and replaced whole each time an archive is recorded (verified, or saved with --no-verify),
// so after a crash they say what the journal says, and the next run brings them up to date.

const MANIFEST_JSON = 'manifest.json';
const MANIFEST_TSV = 'manifest.tsv';

const STATES_ON_DISK = new Set<BatchRecord['state']>(['downloaded', 'unlocked', 'done']);

interface ManifestEntry {
  repository: string;
  /** The archive's file name, in the manifest's directory. */
  archive: string;
  sha256: string | null;
  bytes: number;
  migration_id: number;
  batch: number;
  /** When this program verified the archive (ISO 8601); null when it was not (`--no-verify`). */
  verified_at: string | null;
}

/** The entries of `journal`, by repository name. */
function entriesOf(journal: Journal): ManifestEntry[] {
  const entries = journal.batches.flatMap((batch) => {
    const { archive } = batch;
    const id = batch.migrationIds.at(-1);
    if (!archive || id === undefined || !STATES_ON_DISK.has(batch.state)) return [];
    return batch.repositories.map((repository) => ({
      repository,
      archive: basename(archive.path),
      sha256: archive.sha256 ?? null,
      bytes: archive.bytes,
      migration_id: id,
      batch: batch.index,
      verified_at: archive.verified ? (archive.verifiedAt ?? null) : null,
    }));
  });
  return entries.sort((a, b) => (a.repository < b.repository ? -1 : a.repository > b.repository ? 1 : 0));
}

/** The two files' text for `journal`. */
function manifestOf(journal: Journal): { json: string; tsv: string } {
  const entries = entriesOf(journal);
  const skipped = journal.batches.flatMap((b) => (b.skipped ?? []).map((s) => ({
    repository: s.name,
    reason: s.reason,
    ...(s.migrationId === undefined ? {} : { migration_id: s.migrationId }),
  })));
  const json = `${JSON.stringify({ version: 1, org: journal.org, updated_at: journal.updatedAt, repositories: entries, skipped }, null, 1)}\n`;
  const columns = ['repository', 'archive', 'sha256', 'bytes', 'migration_id', 'verified_at'] as const;
  // Names of the service hold no tab or line break; a cell is cleaned anyway so a line is a record.
  const cell = (value: string | number | null) => (value === null ? '' : String(value).replace(/[\t\r\n]/g, ' '));
  const tsv = [columns.join('\t'), ...entries.map((entry) => columns.map((c) => cell(entry[c])).join('\t'))].join('\n');
  return { json, tsv: `${tsv}\n` };
}

/**
 * Writes the manifest of `dir` from a journal, when what it would say differs from what was last
 * written: each file replaced whole and durably, the TSV first so that manifest.json, the one a
 * script reads, is never older than it.
 */
export function manifestWriter(dir: string): (journal: Journal) => Promise<void> {
  let written: string | undefined;
  return async (journal) => {
    const key = JSON.stringify(journal.batches.map((b) => [b.state, b.archive, b.repositories.length, b.skipped]));
    if (key === written) return;
    const { json, tsv } = manifestOf(journal);
    for (const [name, text] of [[MANIFEST_TSV, tsv], [MANIFEST_JSON, json]] as const) {
      const path = join(dir, name);
      try {
        await replaceFile(path, text, { durable: true });
      } catch (error) {
        throw journalError('write', path, error);
      }
    }
    written = key;
  };
}
