import type { Dispatcher } from 'undici';
import { UnavailableError } from '../errors.js';
import { header } from './headers.js';
import type { ServiceErrorBody } from './types.js';

// Every answer read from the service has a bound (a hostile or broken server cannot fill memory).

/** Largest JSON answer read from the API: a page of 100 migrations with their repositories fits many times over. */
const MAX_JSON_BYTES = 64 << 20;
/** Error answers are read up to this much; the rest is dropped. */
const MAX_ERROR_BYTES = 64 << 10;
/**
 * A 422 names every refused entry of the request, each in an object of about 150 bytes plus the
 * name twice (`message` and `value`; a name is at most 140 characters): 100 names of a start
 * take about 30 KB, and a start of 10,000 repositories (a repos file far past any batch) about
 * 4 MB at the longest names. It is read whole up to this bound, and said to be cut beyond it.
 */
const MAX_VALIDATION_BYTES = 8 << 20;

/**
 * Reads a body up to `limit` bytes. Past it, the body is destroyed (the connection goes) and
 * `undefined` is returned: a server streaming without end costs us `limit` bytes, not all memory.
 */
async function readBounded(body: Dispatcher.ResponseData['body'], limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

export async function readJson<T>(response: Dispatcher.ResponseData, where: string): Promise<T> {
  const declared = Number(header(response.headers, 'content-length'));
  const bytes = declared > MAX_JSON_BYTES ? undefined : await readBounded(response.body, MAX_JSON_BYTES);
  if (bytes === undefined) {
    if (!response.body.destroyed) response.body.destroy();
    throw new UnavailableError(
      `the service's answer to ${where} is larger than ${MAX_JSON_BYTES >> 20} MiB; stopped reading it`,
      { status: response.statusCode, hint: 'check --base-url: the API does not send answers that large' },
    );
  }
  const text = bytes.toString('utf8');
  if (text.length === 0) return undefined as T;
  const type = header(response.headers, 'content-type') ?? '';
  if (!/json/i.test(type)) {
    // Every success of the API is JSON: anything else is a --base-url naming a website or a portal.
    if (response.statusCode >= 200 && response.statusCode < 300) {
      throw new UnavailableError(`${where} answered with ${type.split(';')[0]?.trim() || 'no content type'}, not JSON`, {
        status: response.statusCode,
        hint: 'check --base-url / SVC_BASE_URL: it is the root of the service\'s API, e.g. https://api.example.com',
      });
    }
    return text as T;
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new UnavailableError(`the service answered HTTP ${response.statusCode} with malformed JSON`);
  }
}

/** An error answer as read: its body, and `cutAt` (the bound in bytes) when it was longer than that. */
export interface ErrorAnswer {
  body: ServiceErrorBody;
  cutAt?: number;
  /**
   * The body is an error of the service's API: a JSON object with a `message`
   * (docs/service.md#errors). An HTML page or an empty 404 comes from something else at that URL.
   */
  fromApi: boolean;
}

export async function readErrorBody(response: Dispatcher.ResponseData): Promise<ErrorAnswer> {
  // An error body only explains the status: its first bytes are enough, and an endless one is cut.
  // A 422's list of refused values is what the user must act on: it gets a bound of its own.
  const limit = response.statusCode === 422 ? MAX_VALIDATION_BYTES : MAX_ERROR_BYTES;
  let cut = false;
  const bytes = await readBounded(response.body, limit)
    .then((read) => {
      cut = read === undefined;
      return read;
    })
    .catch(() => undefined);
  if (cut) return { body: {}, cutAt: limit, fromApi: false };
  const text = bytes?.toString('utf8') ?? '';
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed !== 'object' || parsed === null) return { body: {}, fromApi: false };
    return { body: parsed, fromApi: !Array.isArray(parsed) && typeof (parsed as ServiceErrorBody).message === 'string' };
  } catch {
    return { body: text ? { message: text.slice(0, 200) } : {}, fromApi: false };
  }
}
