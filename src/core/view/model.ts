// What the reading of an archive's metadata keeps in memory for the site (core/view/reading.ts):
// per repository the rows of its lists, and the look-ups pages need. Everything longer (bodies,
// comments, events, reviews, releases) waits on disk in the spool.

export type ItemKind = 'issue' | 'pull';

export interface Row {
  number: number;
  title: string;
  state: 'open' | 'closed' | 'merged';
  /** Label URLs, as the record names them. */
  labels: string[];
  /** A user URL. */
  author: string | undefined;
  created_at: string | undefined;
  closed_at: string | undefined;
  merged_at: string | undefined;
  milestone: string | undefined;
  /** The spool file holding its record, comments, events, reviews and review comments. */
  file: number;
}

export interface Label {
  name: string;
  /** Six hex digits, or undefined when the archive's is anything else. */
  color: string | undefined;
}

export interface Milestone {
  url: string;
  title: string;
  state: string;
  description: string;
  due_on: string | undefined;
  closed_at: string | undefined;
}

export interface RepositoryIndex {
  /** `owner/name`, both service names (core/archive/service-names.ts). */
  name: string;
  labels: Map<string, Label>;
  issues: Map<number, Row>;
  pulls: Map<number, Row>;
  milestones: Milestone[];
  releases: number;
  /** The spool file of its releases. */
  releaseFile: number;
  comments: number;
  reviews: number;
  review_comments: number;
}

export interface SiteIndex {
  organization: string | undefined;
  repositories: Map<string, RepositoryIndex>;
  /** User URL → login. */
  users: Map<string, string>;
  /** An attachment's URL (what bodies link to) → its path in the archive (`attachments/<uuid>/<name>`). */
  attachments: Map<string, string>;
  /** Every file kept under `attachments/` and `releases/`, by its path. */
  files: Set<string>;
  /** Records passed over: a URL that names no repository of the service's names, a record of nothing in the archive. */
  passedOver: number;
}

/** One line of an issue's or pull request's spool file. */
export type ItemEntry =
  | { k: 'record'; r: SlimRecord }
  | { k: 'comment'; r: SlimRecord }
  | { k: 'event'; r: SlimRecord }
  | { k: 'review'; r: SlimRecord }
  | { k: 'thread'; r: SlimRecord }
  | { k: 'review_comment'; r: SlimRecord };

/** The fields of a record a page shows: strings, numbers, booleans, lists of strings, release assets. */
export type SlimRecord = Record<string, string | number | boolean | null | string[] | SlimAsset[]>;

export interface SlimAsset {
  name: string;
  size: number | undefined;
  label: string | undefined;
  asset_url: string;
}
