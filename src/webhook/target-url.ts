import { redactUrl } from '../api/redact.js';
import { UsageError } from '../errors.js';

// Where deliveries go (`send --url`, `replay --url`, `listen --forward-to`), read by one rule
// (docs/cli.md#where-deliveries-go): a full URL, or a short form meaning http:// and, without a
// host, this machine.

/** The host a short form without one means: `localhost`, so an app bound to ::1 alone is reached too. */
const THIS_MACHINE = 'localhost';

const FORMS = 'a URL, a port or a path (http://host:port/path, host:port[/path], port[/path], :port[/path] or /path)';

/**
 * The URL `value` names for the flag `flag`, or a UsageError naming the flag: a port or path alone
 * means this machine; a host with a port means http://; a full URL is taken as it is, if http or
 * https, with a host and a port from 1 to 65535.
 */
export function targetUrl(value: string, flag: string): string {
  const wrong = (why = '') =>
    new UsageError(`${flag} takes ${FORMS}, not "${shown(value)}"${why}`, {
      hint: 'a port or path alone means this machine (http://localhost); write a full URL for https or another host',
    });
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1];
  if (scheme !== undefined) {
    if (!/^https?$/i.test(scheme)) throw wrong(`: only http:// and https:// can be posted to`);
    return checked(value, wrong);
  }
  // `//host/path` reads as a path on this machine's port 80, which is never what was meant.
  if (value.startsWith('//')) throw wrong(': a URL needs its scheme: write http:// or https:// before the host');
  // A host only with its port: `example.test/hooks` could as well be a path on this machine.
  const short = /^(?:(?:(\[[0-9a-f:.]+\]|[a-z0-9.-]+)?:)?(\d+))?(\/\S*)?$/i.exec(value);
  if (!short || (short[2] === undefined && short[3] === undefined)) throw wrong();
  const [, host = THIS_MACHINE, port, path = '/'] = short;
  return checked(`http://${host}${port === undefined ? '' : `:${port}`}${path}`, wrong);
}

/** The URL if a request can be made to it (a host, a port from 1 to 65535), else `wrong()` thrown now rather than at each post. */
function checked(url: string, wrong: (why?: string) => UsageError): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    const port = /^[a-z]+:\/\/[^/?#]*:(\d+)(?:[/?#]|$)/i.exec(url)?.[1];
    throw wrong(port !== undefined && Number(port) > 65535 ? ': a port is at most 65535' : '');
  }
  if (parsed.hostname === '') throw wrong();
  if (parsed.port === '0') throw wrong(': port 0 cannot be posted to');
  return url;
}

/**
 * The value as the user may see it again, as it was written (a URL parser would rewrite
 * `http:/host` into a URL that looks right): a user and password before its host, even in a
 * value no URL parser reads, and query values named like credentials never shown.
 */
function shown(value: string): string {
  const query = value.search(/[?#]/);
  const [before, after] = query < 0 ? [value, ''] : [value.slice(0, query), value.slice(query)];
  // Whatever precedes the last @ of the part naming the host, after any scheme and slashes.
  const head = before.replace(/^((?:[a-z][a-z0-9+.-]*:(?=\/))?\/*)([^/]*)@/i, '$1REDACTED@');
  return head + (after === '' ? '' : redactUrl(`http://x/${after}`).slice('http://x/'.length));
}
