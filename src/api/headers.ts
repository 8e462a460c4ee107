export type Headers = Record<string, string | string[] | undefined>;

/** One header's value, repeated headers joined as HTTP allows. */
export function header(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}
