// What a request to the service is, apart from the client that sends it: the request loop
// (client.ts) and the modules that read its answers (http-errors, rate-limit, network-errors) share it.

export type HttpMethod = 'GET' | 'POST' | 'DELETE';

export interface RequestOptions {
  method: HttpMethod;
  /** A path below the base URL (`/orgs/x/migrations`) or an absolute URL (a `Link` target). */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** Statuses besides 2xx that the caller handles itself (e.g. 302 for the archive). */
  accept?: number[];
  /** Message and hint for a 404, naming what was looked for. */
  notFound?: { message: string; hint?: string };
  /** A list endpoint: a success that is not a JSON array is refused, not handed on. */
  list?: boolean;
}
