import { UsageError } from '../errors.js';

/** The service's base URL as given (--base-url, SVC_BASE_URL, config): absolute, http(s). */
export function parseBaseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`the base URL "${raw}" is not a valid URL`, {
      hint: 'pass an absolute URL such as https://api.example.com with --base-url or SVC_BASE_URL',
    });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new UsageError(`the base URL must be http(s), not ${url.protocol}`);
  }
  return url;
}
