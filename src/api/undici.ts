import { Agent, type Dispatcher } from 'undici';
import { ALWAYS_VERIFY } from './trust.js';

// undici through its public entry, the one place the program loads it (the webhook sender reaches it
// here too). Its index loads fetch, WebSocket and caching as well, which no command needs: on Node
// 20, which has no compile cache, that costs a command that talks HTTP some 50 ms at start-up; on
// Node 22 and 24 the compile cache makes it level. Private paths would save that on Node 20 only,
// and would pin undici to the one minor version whose files they name.

export { Agent, EnvHttpProxyAgent } from 'undici';
export type { Dispatcher } from 'undici';

let sharedAgent: Agent | undefined;

/**
 * Calls undici's request with a URL, through `dispatcher`, else an agent of this module's own (not
 * undici's global one, which Node's own fetch shares).
 */
export function request(
  url: URL,
  options: Omit<Dispatcher.RequestOptions, 'origin' | 'path'> & { dispatcher?: Dispatcher },
): Promise<Dispatcher.ResponseData> {
  const { dispatcher = (sharedAgent ??= new Agent({ connect: ALWAYS_VERIFY })), ...rest } = options;
  return dispatcher.request({ ...rest, origin: url.origin, path: url.pathname + url.search });
}

/** Calls undici's stream with a URL, as its index's `stream(url, options, factory)` does. */
export function stream(
  url: URL,
  options: Omit<Dispatcher.RequestOptions, 'origin' | 'path'> & { dispatcher: Dispatcher },
  factory: Dispatcher.StreamFactory,
): Promise<Dispatcher.StreamData> {
  const { dispatcher, ...rest } = options;
  return dispatcher.stream({ ...rest, origin: url.origin, path: url.pathname + url.search }, factory);
}
