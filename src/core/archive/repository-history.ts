// What a repository record (the archive's repositories_*.json, or the service's list of a
// migration's repositories) says of a repository's history: a repository whose git data names no
// ref must be one that never had any (docs/reliability.md#the-archive-check).

/** The fields of a record that tell whether a repository was ever pushed to. */
export interface RepositoryHistory {
  /** The service's `size`, in KiB: 0 for a repository nothing was pushed to. */
  size?: number;
  pushedAt?: string;
  createdAt?: string;
}

type HistoryFields = { size?: unknown; pushed_at?: unknown; created_at?: unknown };

/** The history fields of a record, or undefined when it has none of them. */
export function historyOf(record: HistoryFields): RepositoryHistory | undefined {
  const history: RepositoryHistory = {
    ...(typeof record.size === 'number' ? { size: record.size } : {}),
    ...(typeof record.pushed_at === 'string' ? { pushedAt: record.pushed_at } : {}),
    ...(typeof record.created_at === 'string' ? { createdAt: record.created_at } : {}),
  };
  return Object.keys(history).length > 0 ? history : undefined;
}

/**
 * What in `history` says the repository was pushed to (a size above 0, or a push after its
 * creation), in words, or undefined when it says nothing of the kind.
 */
export function pushedTo(history: RepositoryHistory | undefined): string | undefined {
  if (!history) return undefined;
  if (history.size !== undefined && history.size > 0) return `a size of ${history.size} KiB`;
  const pushed = history.pushedAt === undefined ? NaN : Date.parse(history.pushedAt);
  const created = history.createdAt === undefined ? NaN : Date.parse(history.createdAt);
  if (pushed > created) return `a push at ${history.pushedAt}, after its creation at ${history.createdAt}`;
  return undefined;
}
