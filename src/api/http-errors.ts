import {
  AuthError,
  CliError,
  ExitCode,
  NotFoundError,
  type RejectedItem,
  UnavailableError,
  UsageError,
  ValidationError,
} from '../errors.js';
import type { HttpMethod, RequestOptions } from './request.js';
import { scrub } from './redact.js';
import type { ServiceErrorBody } from './types.js';

// The table from an HTTP failure to the error the user sees, apart from the request loop that meets
// them (client.ts) so it reads, and is tested, as one table (docs/service.md#errors).

export interface StatusErrorInput {
  status: number;
  method: HttpMethod;
  url: string;
  body: ServiceErrorBody;
  notFound?: RequestOptions['notFound'];
  tokenPresent: boolean;
  secrets?: (string | undefined)[];
  /** The body was longer than this many bytes and was not read (api/bodies.ts). */
  cutAt?: number | undefined;
  /** The body is an error of the service's API (api/bodies.ts); false for an HTML page, say. */
  fromApi?: boolean;
}

/** The one table from an HTTP failure to the error the user sees (and so to its exit code). */
export function errorForStatus(input: StatusErrorInput): CliError {
  const { status, method, url, body } = input;
  const said = scrub(body.message?.trim() ?? '', input.secrets ?? []);
  const where = `${method} ${url}`;
  const details = { status };
  if (status === 401) {
    if (/bad credentials/i.test(said)) {
      return new AuthError(
        'the token was rejected (Bad Credentials): it has been revoked, has expired or is mistyped',
        {
          ...details,
          hint: 'create a new classic token as an organization owner, then run `svc-migrate auth login` or set SVC_TOKEN',
        },
      );
    }
    return new AuthError(
      input.tokenPresent
        ? `the service did not accept the token (401${said ? `: ${said}` : ''})`
        : 'no token: the migration endpoints need one',
      { ...details, hint: 'run `svc-migrate auth login`, set SVC_TOKEN or pass --token' },
    );
  }
  if (status === 403) {
    return new AuthError(`forbidden${said ? `: ${said}` : ''} (${where})`, {
      ...details,
      hint: 'migration endpoints need a classic token of an organization owner; fine-grained, app user and installation tokens are rejected',
    });
  }
  if (status === 404 && input.notFound && input.fromApi === false) {
    // What answers an API path with no error of the API is not the API (docs/service.md#errors): a
    // web site's root, a gateway, a path missing from the base URL. Blaming the organization would
    // send the user astray.
    return new NotFoundError(`the base URL is probably wrong: ${where} answered 404 with no error of the service's API${bodyKind(input)}`, {
      ...details,
      hint: 'check --base-url / SVC_BASE_URL: it is the root of the service\'s API, e.g. https://api.example.com',
    });
  }
  if (status === 404 || status === 410) {
    return new NotFoundError(input.notFound?.message ?? `not found: ${where}`, {
      ...details,
      hint: input.notFound?.hint ?? 'check the organization and id; migrations are visible to organization owners only',
    });
  }
  if (status === 422) return validationError(input, said);
  if (status === 400) {
    return new UsageError(`the service rejected the request as malformed${said ? `: ${said}` : ''} (${where})`, {
      ...details,
      hint: 'check --api-version and the values you passed',
    });
  }
  if (status === 408 || status >= 500) {
    return new UnavailableError(`the service failed with HTTP ${status}${said ? `: ${said}` : ''} (${where})`, {
      ...details,
      hint:
        method === 'POST'
          ? 'the migration may have started anyway: run `svc-migrate list` before starting another one'
          : 'the service may be having trouble; try again in a few minutes',
    });
  }
  return new CliError(`unexpected HTTP ${status}${said ? `: ${said}` : ''} (${where})`, ExitCode.Unavailable, details);
}

/** What came instead of the API's error, as far as a user can recognise it. */
function bodyKind(input: StatusErrorInput): string {
  if (input.cutAt !== undefined) return '';
  if (Object.keys(input.body).length === 0) return ' (an empty body)';
  return /^\s*<(!doctype|html|\?xml)/i.test(input.body.message ?? '') ? ' (a web page)' : '';
}

/**
 * The entries of a 422 that each name one item of an array field of the request (`field`, `index`),
 * when every entry does: a refusal with any other reason is not one of items alone.
 */
function rejectedItems(body: ServiceErrorBody): RejectedItem[] {
  const entries = body.errors ?? [];
  const items: RejectedItem[] = [];
  for (const entry of entries) {
    if (typeof entry === 'string' || !entry.field || !Number.isSafeInteger(entry.index) || (entry.index as number) < 0) return [];
    const reason = entry.message ?? entry.code ?? 'invalid';
    items.push({ field: entry.field, index: entry.index as number, value: entry.value, reason: String(reason) });
  }
  return items;
}

/** How many refused repositories, or other messages, a 422's one line names; `--json` has them all. */
const SHOWN = 10;

/**
 * A 422 in one readable line: the repositories the service does not know, counted and the first
 * few named (`400 repositories are not in acme: a, b, … and 390 more`), then its other messages.
 * The error keeps every message and every refused name for `--json`; the hint speaks only of what
 * the line shows.
 */
function validationError(input: StatusErrorInput, said: string): ValidationError {
  const details = { status: input.status };
  if (input.cutAt !== undefined) {
    return new ValidationError(
      `the service rejected the request, and its explanation was longer than ${input.cutAt >> 20} MiB: it was not read`,
      [],
      { ...details, hint: 'start fewer repositories at once (export --output-dir with --batch-size splits them), then run again' },
    );
  }
  const entries = input.body.errors ?? [];
  const unknown = entries.filter(isUnknownRepository);
  const messages = validationMessages({ ...input.body, errors: entries.filter((entry) => !unknown.includes(entry as never)) });
  const refused = unknown.map((entry) => entry.value);
  const org = organizationOf(input.url);
  const parts: string[] = [];
  if (refused.length > 0) {
    const short = refused.map((name) => (org && name.toLowerCase().startsWith(`${org.toLowerCase()}/`) ? name.slice(org.length + 1) : name));
    const verb = refused.length === 1 ? 'repository is' : 'repositories are';
    parts.push(`${refused.length} ${verb} not in ${org ?? 'the organization'}: ${shortList(short)}`);
  }
  if (messages.length > 0) parts.push(shortList(messages, '; '));
  const summary = parts.length > 0 ? parts.join('; ') : said || 'validation failed';
  const hidden = Math.max(0, refused.length - SHOWN) + Math.max(0, messages.length - SHOWN);
  let hint: string;
  // "Spammed" is said in a message of its own, never in a repository's name (`spam-filter`).
  if (/spam|too many|abuse/i.test(messages.join(' ') || said)) hint = 'wait a few minutes before starting another migration';
  else if (parts.length === 0) hint = 'check the values you passed and run the command again';
  else {
    const what = [refused.length > 0 ? 'remove the repositories' : '', messages.length > 0 ? 'correct the values' : '']
      .filter(Boolean)
      .join(' and ');
    const more = hidden > 0 ? ` and the ${hidden} more (--json lists every one)` : '';
    hint = `${what} named above${more}, then run the command again`;
  }
  return new ValidationError(
    `the service rejected the request: ${summary}`,
    validationMessages(input.body),
    { ...details, hint, items: rejectedItems(input.body) },
    refused,
  );
}

/** `a, b, c, … and 7 more`: the first SHOWN items. */
function shortList(items: string[], separator = ', '): string {
  if (items.length <= SHOWN) return items.join(separator);
  return `${items.slice(0, SHOWN).join(separator)}${separator}… and ${items.length - SHOWN} more`;
}

type ErrorEntry = NonNullable<ServiceErrorBody['errors']>[number];

/** An entry of `repositories` refused as a value the organization does not hold (docs/service.md#start-migration). */
function isUnknownRepository(entry: ErrorEntry): entry is Exclude<ErrorEntry, string> & { value: string } {
  return (
    typeof entry === 'object' &&
    entry !== null &&
    entry.field === 'repositories' &&
    typeof entry.value === 'string' &&
    (entry.code === 'invalid_value' || /not (a repository|found)|does not exist/i.test(entry.message ?? ''))
  );
}

/** The organization of an `/orgs/{org}/…` request. */
function organizationOf(url: string): string | undefined {
  const match = /\/orgs\/([^/?#]+)/.exec(url);
  if (!match?.[1]) return undefined;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return match[1];
  }
}

function validationMessages(body: ServiceErrorBody): string[] {
  const out: string[] = [];
  for (const item of body.errors ?? []) {
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    // An entry of an array field is named by `index` (and `value`): `repositories[0] (x/y): invalid_value`.
    const field = item.field && item.index !== undefined ? `${item.field}[${item.index}]` : item.field;
    const value = typeof item.value === 'string' ? ` (${item.value})` : '';
    if (item.message) out.push(field ? `${field}: ${item.message}` : item.message);
    else if (field) out.push(`${field}${value}: ${item.code ?? 'invalid'}`);
  }
  if (out.length === 0 && body.message && body.message !== 'Validation Failed') out.push(body.message);
  // As the service wrote them: what prints them makes them inert (support/outside-text.ts).
  return out.map(String);
}
