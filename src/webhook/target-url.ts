import { UsageError } from '../errors.js';

// Where deliveries go, as the user writes it: a full URL, or a short form meaning this machine.

/** `webhook send --url`: a URL, `host:port[/path]` meaning http://, or a bare port on 127.0.0.1. */
export function deliveryUrl(value: string): string {
  if (/^https?:\/\//i.test(value)) return value;
  if (/^\d+$/.test(value)) return `http://127.0.0.1:${value}/`;
  if (/^(\[[0-9a-f:.]+\]|[\w.-]+):\d+(\/.*)?$/i.test(value)) return `http://${value}${value.includes('/') ? '' : '/'}`;
  throw new UsageError(`--url takes a URL such as http://127.0.0.1:8787/ (or 127.0.0.1:8787), not "${value}"`);
}

/** `webhook listen --forward-to`: `3000`, `:3000/hooks`, `/hooks` or `localhost:3000/x` mean this machine. */
export function forwardUrl(target: string): string {
  if (/^https?:\/\//i.test(target)) return target;
  const match = /^(?:(localhost|127\.0\.0\.1)?:?(\d+))?(\/.*)?$/.exec(target);
  if (!match || (!match[2] && !match[3])) throw new UsageError(`--forward-to takes a URL, a port or a path, not "${target}"`);
  return `http://${match[1] ?? 'localhost'}${match[2] ? `:${match[2]}` : ''}${match[3] ?? '/'}`;
}
