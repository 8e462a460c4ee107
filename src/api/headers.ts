export type Headers = Record<string, string | string[] | undefined>;

/** One header's value, repeated headers joined as HTTP allows. */
export function header(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The answer headers a --verbose trace shows. */
const TRACED_RESPONSE_HEADERS = [
  'location',
  'etag',
  'link',
  'retry-after',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'x-poll-interval',
];

export function pickTraceHeaders(headers: Headers): Record<string, string | undefined> {
  return Object.fromEntries(TRACED_RESPONSE_HEADERS.map((name) => [name, header(headers, name)]));
}
