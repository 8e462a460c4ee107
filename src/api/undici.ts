import type * as Undici from 'undici';
import { undiciParts } from './tuning.js';

/** The parts of undici svc-migrate uses, loaded as this module is (tuning.ts says why in parts). */
export const undici = undiciParts();

let sharedAgent: Undici.Agent | undefined;

/** Calls undici's request with a URL, as its index's `request(url, options)` does. */
export function request(
  url: URL,
  options: Omit<Undici.Dispatcher.RequestOptions, 'origin' | 'path'> & { dispatcher?: Undici.Dispatcher },
): Promise<Undici.Dispatcher.ResponseData> {
  const { dispatcher = (sharedAgent ??= new undici.Agent()), ...rest } = options;
  return dispatcher.request({ ...rest, origin: url.origin, path: url.pathname + url.search });
}

/** Calls undici's stream with a URL, as its index's `stream(url, options, factory)` does. */
export function stream(
  url: URL,
  options: Omit<Undici.Dispatcher.RequestOptions, 'origin' | 'path'> & { dispatcher: Undici.Dispatcher },
  factory: Undici.Dispatcher.StreamFactory,
): Promise<Undici.Dispatcher.StreamData> {
  const { dispatcher, ...rest } = options;
  return dispatcher.stream({ ...rest, origin: url.origin, path: url.pathname + url.search }, factory);
}
