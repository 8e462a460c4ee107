import type { Dispatcher } from 'undici';
import { UsageError } from '../errors.js';
import { ALWAYS_VERIFY, type ExtraTrust, secureContextFor } from './trust.js';
import { Agent, EnvHttpProxyAgent } from './undici.js';

// The connections behind the client: through the user's proxy, or straight.

export interface ProxySettings {
  httpProxy?: string;
  httpsProxy?: string;
  noProxy?: string;
}

export interface Timeouts {
  /** TCP/TLS connect. */
  connectMs: number;
  /** From request sent to response headers received. */
  headersMs: number;
  /** Longest silence between two body chunks (not a cap on the whole body). */
  bodyIdleMs: number;
}

// Generous on purpose: a slow but healthy answer must not hit a cliff; a dead peer must not hang forever.
const DEFAULT_TIMEOUTS: Timeouts = { connectMs: 15_000, headersMs: 60_000, bodyIdleMs: 60_000 };

/** undici's per-request timeouts for the client's settings. */
export function requestTimeouts(timeouts: Partial<Timeouts> | undefined): { headersTimeout: number; bodyTimeout: number } {
  const { headersMs, bodyIdleMs } = { ...DEFAULT_TIMEOUTS, ...timeouts };
  return { headersTimeout: headersMs, bodyTimeout: bodyIdleMs };
}

export function createDispatcher(
  proxy: ProxySettings | undefined,
  timeouts: Partial<Timeouts> | undefined,
  trust: ExtraTrust | undefined,
): Dispatcher {
  const { connectMs } = { ...DEFAULT_TIMEOUTS, ...timeouts };
  const tls = { ...ALWAYS_VERIFY, ...(trust ? { secureContext: secureContextFor(trust) } : {}) };
  if (proxy && (proxy.httpProxy || proxy.httpsProxy)) {
    // A proxy variable is the user's environment: a value that is not a URL is theirs to fix.
    for (const [name, value] of [['HTTP_PROXY', proxy.httpProxy], ['HTTPS_PROXY', proxy.httpsProxy]] as const) {
      if (value && !URL.canParse(value)) {
        throw new UsageError(`${name} is not a URL: "${value}"`, {
          hint: `set it to a URL such as http://proxy.example.com:3128, or unset ${name} (and ${name.toLowerCase()})`,
        });
      }
    }
    // requestTls: the connection to the service through the proxy's tunnel; proxyTls: to an https:// proxy.
    const connect = { timeout: connectMs, ...tls };
    return new EnvHttpProxyAgent({ connect, requestTls: connect, proxyTls: connect, ...proxy });
  }
  return new Agent({ connect: { timeout: connectMs, ...tls } });
}
