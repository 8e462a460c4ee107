import { isSystemError, portError } from '../../support/system-errors.js';
import type { ListenerObserver } from '../../webhook/listener.js';
import { DeliveryLog } from '../../webhook/inspector/log.js';
import { logObserver } from '../../webhook/inspector/observer.js';
import type { PageSource } from '../../webhook/inspector/page.js';
import type { PageForward, ReplayTargets } from '../../webhook/inspector/replay.js';
import { type Inspector, startInspector } from '../../webhook/inspector/server.js';
import type { ForwardHeader } from '../../webhook/forward-headers.js';
import { targetUrl } from '../../webhook/target-url.js';

// The inspector's page for `webhook listen --inspect` and `webhook inspect`: its server started on
// 127.0.0.1, a port problem said as the flag's.

/** Starts the page's server; `flag` is the option that chose `port`. */
export async function openInspector(
  log: DeliveryLog,
  source: PageSource,
  targets: Omit<ReplayTargets, 'parseUrl'>,
  port: number,
  flag: string,
): Promise<Inspector> {
  try {
    // What the page types is read as --url and --forward-to are: one rule for every URL.
    return await startInspector({ port, log, source, targets: { ...targets, parseUrl: (value) => targetUrl(value, 'the replay URL') } });
  } catch (error) {
    if (isSystemError(error) && error.syscall === 'listen') throw portError(error, { port, host: '127.0.0.1', flag });
    throw error;
  }
}

export interface ListenInspection {
  observer: ListenerObserver;
  /** What the page says of the receiver; `where` is set once it listens. */
  source: PageSource;
  inspector: Inspector;
  /** Given the listener's `redeliver` once it listens: "replay to this receiver" hands deliveries back to it. */
  receiver: NonNullable<ReplayTargets['receiver']>;
  /** Given its reader once the listener listens: the page's replays to the forward target (journaled, counted). */
  forwards: { told?: (forward: PageForward) => void };
}

/** `listen --inspect [port]`: a log fed by the listener, and its page. */
export async function inspectListener(options: {
  port: number;
  keep: number;
  secrets: string[];
  forward?: { target: string; shown: string; timeoutMs: number; headers: readonly ForwardHeader[] } | undefined;
  saveDir?: string | undefined;
}): Promise<ListenInspection> {
  const log = new DeliveryLog(options.keep);
  const source: PageSource = { mode: 'listen', where: '', forwardTarget: options.forward?.shown, saveDir: options.saveDir, secrets: options.secrets.length };
  const given = options.forward;
  const forward = given ? { target: given.target, timeoutMs: given.timeoutMs, headers: given.headers } : undefined;
  const receiver: ListenInspection['receiver'] = {};
  const forwards: ListenInspection['forwards'] = {};
  const targets = { forward, secrets: options.secrets, receiver, forwarded: (told: PageForward) => forwards.told?.(told) };
  const inspector = await openInspector(log, source, targets, options.port, '--inspect');
  return { observer: logObserver(log, forward !== undefined), source, inspector, receiver, forwards };
}
