import type { ArchiveProblem } from './problem.js';

interface InspectedRepository {
  name: string;
  /** Ref name → object id, from the repository's git data. */
  refs: Record<string, string>;
  /** Bytes of git data in the archive (uncompressed). */
  git_bytes: number;
  /** Records per metadata kind (issues, pull_requests, releases, …) that belong to it. */
  counts: Record<string, number>;
}

export interface InspectReport {
  path: string;
  bytes: number;
  /** The archive was read to its end without a structural fault. */
  complete: boolean;
  organizations: string[];
  repositories: InspectedRepository[];
  metadata: { file: string; kind: string; records?: number }[];
  problems: ArchiveProblem[];
}

/** What a migration archive holds, read in one streaming pass without extracting anything. */
export async function inspectArchive(path: string, onProgress?: (read: number, total: number) => void): Promise<InspectReport> {
  // Loaded here, not at start-up: the archive reader and the JSON tokenizer cost every command that never
  // reads an archive (test/e2e/cli.test.ts).
  const { scanArchive } = await import('./scan.js');
  const scan = await scanArchive(path, onProgress ? { onProgress } : {});
  const names = [...new Set([...scan.repositories, ...scan.gitData.keys()])];
  return {
    path,
    bytes: scan.bytes,
    complete: scan.complete,
    organizations: scan.organizations,
    repositories: names.map((name) => {
      const git = scan.gitData.get(name);
      return {
        name,
        refs: Object.fromEntries(Object.entries(git?.refs ?? {}).sort(([a], [b]) => a.localeCompare(b))),
        git_bytes: git?.bytes ?? 0,
        counts: scan.counts[name] ?? {},
      };
    }),
    metadata: scan.metadataFiles.map((file) => ({ ...file })),
    problems: scan.problems.toList(),
  };
}
