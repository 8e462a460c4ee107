import { createRequire } from 'node:module';
import type * as Undici from 'undici';

/**
 * The parts of undici svc-migrate uses, loaded on their own. undici's index also loads fetch,
 * WebSocket, EventSource, caching and mocking, which no command here needs: 90–100 ms of start-up
 * for every command that talks HTTP, where these parts take 35–40 ms (docs/benchmarks.md). Should a
 * later undici move these files, the whole package is loaded instead: slower, never broken.
 */
export interface UndiciParts {
  Agent: typeof Undici.Agent;
  buildConnector: typeof Undici.buildConnector;
  /** Only loaded when a proxy is configured. */
  loadEnvHttpProxyAgent(): typeof Undici.EnvHttpProxyAgent;
}

type Require = (id: string) => unknown;

export function loadUndiciParts(load: Require): UndiciParts {
  try {
    // What undici's index does besides loading everything: request, stream, connect… become methods
    // of every dispatcher (its proxy agent relies on `connect`).
    const Dispatcher = load('undici/lib/dispatcher/dispatcher.js') as typeof Undici.Dispatcher;
    Object.assign(Dispatcher.prototype, load('undici/lib/api/index.js'));
    return {
      Agent: load('undici/lib/dispatcher/agent.js') as typeof Undici.Agent,
      buildConnector: load('undici/lib/core/connect.js') as typeof Undici.buildConnector,
      loadEnvHttpProxyAgent: () => load('undici/lib/dispatcher/env-http-proxy-agent.js') as typeof Undici.EnvHttpProxyAgent,
    };
  } catch {
    const whole = load('undici') as typeof Undici;
    return { Agent: whole.Agent, buildConnector: whole.buildConnector, loadEnvHttpProxyAgent: () => whole.EnvHttpProxyAgent };
  }
}

export const undici = loadUndiciParts(createRequire(import.meta.url));

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
