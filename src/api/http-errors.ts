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
  if (status === 404 || status === 410) {
    return new NotFoundError(input.notFound?.message ?? `not found: ${where}`, {
      ...details,
      hint: input.notFound?.hint ?? 'check the organization and id; migrations are visible to organization owners only',
    });
  }
  if (status === 422) {
    const messages = validationMessages(body);
    const summary = messages.length > 0 ? messages.join('; ') : said || 'validation failed';
    return new ValidationError(`the service rejected the request: ${summary}`, messages, {
      ...details,
      items: rejectedItems(body),
      hint: /spam|too many|abuse/i.test(summary)
        ? 'wait a few minutes before starting another migration'
        : 'correct the values named above and run the command again',
    });
  }
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
  // As the service wrote them: what prints them makes them inert (ui/terminal-safe.ts).
  return out.map(String);
}
