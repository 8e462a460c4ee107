import { UsageError } from '../errors.js';

// Where deliveries go, as the user writes it: a full URL, or a short form meaning this machine.

/** `webhook send --url`: a URL, `host:port[/path]` meaning http://, or a bare port on 127.0.0.1. */
export function deliveryUrl(value: string): string {
  const wrong = () => new UsageError(`--url takes a URL such as http://127.0.0.1:8787/ (or 127.0.0.1:8787), not "${value}"`);
  if (/^https?:\/\//i.test(value)) return usable(value, wrong);
  if (/^\d+$/.test(value)) return usable(`http://127.0.0.1:${value}/`, wrong);
  if (/^(\[[0-9a-f:.]+\]|[\w.-]+):\d+(\/.*)?$/i.test(value)) return usable(`http://${value}${value.includes('/') ? '' : '/'}`, wrong);
  throw wrong();
}

/** The URL if a request can be made to it (a host, a port up to 65535), else `wrong()` thrown now rather than at each send. */
function usable(url: string, wrong: () => UsageError): string {
  try {
    if (new URL(url).hostname !== '') return url;
  } catch {
    // fall through: not a URL
  }
  throw wrong();
}

/** `webhook listen --forward-to`: `3000`, `:3000/hooks`, `/hooks` or `localhost:3000/x` mean this machine. */
export function forwardUrl(target: string): string {
  const wrong = () => new UsageError(`--forward-to takes a URL, a port or a path, not "${target}"`);
  if (/^https?:\/\//i.test(target)) return usable(target, wrong);
  const match = /^(?:(localhost|127\.0\.0\.1)?:?(\d+))?(\/.*)?$/.exec(target);
  if (!match || (!match[2] && !match[3])) throw wrong();
  return usable(`http://${match[1] ?? 'localhost'}${match[2] ? `:${match[2]}` : ''}${match[3] ?? '/'}`, wrong);
}
