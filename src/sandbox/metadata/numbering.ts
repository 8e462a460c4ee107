import { createHash } from 'node:crypto';
import type { Repository } from '../../api/types.js';
import type { SeedOrganization, SeedRepository } from '../seed.js';

// What every builder of the archive's records shares: the people of the organization, one
// repository's numbers, and the values derived from them. Everything is a function of the seed
// (names, counts), never of a clock or chance, so one seed always gives the same records.

/** Issues and pull requests of a repository the seed says nothing of (docs/sandbox.md#seed-data). */
const DEFAULT_ISSUES = 3;
const DEFAULT_PULL_REQUESTS = 3;

export interface Person {
  login: string;
  id: number;
  /** The user's page, which every record names them by. */
  url: string;
}

export interface RepoContext {
  repo: Repository;
  /** The repository's page: what records name it by. */
  url: string;
  /** The service's web origin (`https://github.example`). */
  web: string;
  issues: number;
  pulls: number;
  people: Person[];
  /** Milliseconds: the repository's creation, from which every record's time is counted. */
  base: number;
}

/** The organization's owners and members, in that order; the organization itself when it has none. */
export function peopleOf(org: SeedOrganization, users: readonly { login: string; id: number }[], web: string): Person[] {
  const logins = [...new Set([...org.owners, ...org.members])];
  if (logins.length === 0) logins.push(org.login);
  return logins.map((login) => ({ login, id: users.find((user) => user.login === login)?.id ?? idOf(login), url: `${web}/${login}` }));
}

export function repoContext(repo: Repository, seed: SeedRepository | undefined, people: Person[]): RepoContext {
  // A repository never pushed to has no branch to ask to merge.
  const empty = repo.size === 0;
  return {
    repo,
    url: repo.html_url,
    web: new URL(repo.html_url).origin,
    issues: seed?.issues ?? DEFAULT_ISSUES,
    pulls: empty ? 0 : (seed?.pull_requests ?? DEFAULT_PULL_REQUESTS),
    people,
    base: Date.parse(repo.created_at),
  };
}

/** A stable number for a name, where the seed gives none. */
function idOf(text: string): number {
  return createHash('sha1').update(text).digest().readUInt32BE(0) % 100_000_000;
}

/** A stable object id (40 hex digits) for what `text` names. */
export function shaOf(text: string): string {
  return createHash('sha1').update(text).digest('hex');
}

/** A stable UUID for what `text` names, as the service names attachments. */
export function uuidOf(text: string): string {
  const hex = shaOf(text);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** A time as the service writes it (seconds, UTC). */
export function at(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const MINUTE = 60_000;

/** When number `number` was opened: an hour apart each, so the order of numbers is the order of time. */
function openedAt(ctx: RepoContext, number: number): number {
  return ctx.base + number * 60 * MINUTE;
}

/** `minutes` after number `number` was opened. */
export function after(ctx: RepoContext, number: number, minutes: number): string {
  return at(openedAt(ctx, number) + minutes * MINUTE);
}

/** The person at `index`, round the organization. */
export function person(ctx: RepoContext, index: number): Person {
  return ctx.people[index % ctx.people.length] as Person;
}

export interface Numbered {
  number: number;
  kind: 'issue' | 'pull';
  /** Its place among the issues, or among the pull requests. */
  index: number;
}

/**
 * The repository's issues and pull requests in one sequence of numbers, as the service numbers
 * them: 1 and 2 issues and 3 a pull request (the `pull_refs` of the seed name pull request 3), then
 * the rest spread evenly. Made as it is read, so 12,000 numbers are never held.
 */
export function* numbersOf(ctx: RepoContext): Generator<Numbered> {
  const total = ctx.issues + ctx.pulls;
  let issues = 0;
  let pulls = 0;
  for (let number = 1; number <= total; number++) {
    let pull = number <= 2 ? false : number === 3 ? true : pulls * total < number * ctx.pulls;
    if (pull && pulls === ctx.pulls) pull = false;
    if (!pull && issues === ctx.issues) pull = true;
    yield pull ? { number, kind: 'pull', index: pulls++ } : { number, kind: 'issue', index: issues++ };
  }
}

/** The numbers of one kind. */
export function* numbersOfKind(ctx: RepoContext, kind: Numbered['kind']): Generator<Numbered> {
  for (const numbered of numbersOf(ctx)) if (numbered.kind === kind) yield numbered;
}

export function issueUrl(ctx: RepoContext, number: number): string {
  return `${ctx.url}/issues/${number}`;
}

export function pullUrl(ctx: RepoContext, number: number): string {
  return `${ctx.url}/pull/${number}`;
}
