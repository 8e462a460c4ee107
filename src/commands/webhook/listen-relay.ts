import { type Command, Option } from 'commander';
import { extraTrust, type Context } from '../../context.js';
import { UsageError } from '../../errors.js';
import { redactUrl } from '../../api/redact.js';
import { inertText } from '../../support/outside-text.js';
import { relayGapJson, relayGapLine } from '../../ui/webhook.js';
import type { ListenerEvents, ListenerOptions, ListenSummary } from '../../webhook/listener.js';

// `webhook listen --relay URL`: what the flag adds to the command (docs/cli.md#webhook-listen):
// its reading, the connection to the relay, and what the user reads of it.

export function relayOption(): Option {
  return new Option('--relay <url>', 'read deliveries from a relay channel (smee.io, gosmee, the sandbox\'s /relay); no port is bound unless --port is given');
}

/**
 * The channel's URL, checked; and whether a port is bound too: with --relay, only when --port
 * was given. A channel URL is a capability: it goes to the relay only.
 */
export function parseRelayFlag(relay: string | undefined, command: Command): { relay?: string; serve?: false } {
  if (relay === undefined) return {};
  const url = URL.canParse(relay) ? new URL(relay) : undefined;
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password) {
    throw new UsageError(`--relay must be a relay channel's http(s) URL without credentials, not "${redactUrl(relay)}"`, { hint: 'create a channel with `svc-migrate webhook relay new`' });
  }
  return { relay: url.href, ...(command.getOptionValueSource('port') === 'cli' ? {} : { serve: false as const }) };
}

/** The listener's relay: through the API client's proxy and trust (--ca-file, SVC_CA_FILE), TLS always verified. */
export async function relayListening(context: Context, relay: string | undefined): Promise<ListenerOptions['relay']> {
  if (relay === undefined) return undefined;
  // Loaded when a relay is read: undici is not needed at start-up otherwise.
  const { createDispatcher } = await import('../../api/dispatcher.js');
  const dispatcher = createDispatcher(context.settings.proxy, undefined, extraTrust(context.settings));
  context.defer(() => dispatcher.close());
  return { url: relay, dispatcher };
}

/** Each gap, when it opens and when it closes: a warning, and with --json a line of its own. */
export function relayGapLines(context: Context): ListenerEvents['onRelayGap'] {
  const { out } = context;
  return (gap, retryInMs) => {
    out.jsonLine(relayGapJson(gap));
    out.warn(relayGapLine(gap, retryInMs));
  };
}

/** The start-up line: where deliveries come from, then where they go. */
export function sourceLine(url: string | undefined, relay: string | undefined): string {
  return [url === undefined ? '' : `listening on ${url}`, relay === undefined ? '' : `reading relay channel ${inertText(relay)}`].filter(Boolean).join(' and ');
}

/** What the summary adds for a relay. */
export function relaySummary(summary: ListenSummary, relay: string | undefined): string {
  if (relay === undefined) return '';
  return `, unverifiable ${summary.unverifiable}, relay gaps ${summary.relay_gaps}`;
}

/** A gap still open when the session ended: what was sent to the channel since is lost. */
export function relayLostAtEnd(context: Context, summary: ListenSummary): void {
  if (summary.relay_lost_since === null) return;
  context.out.warn(
    `the relay channel was lost at ${summary.relay_lost_since.slice(11, 19)} and not read again before the end: deliveries sent to it since were lost; redeliver them from the webhook's settings`,
  );
}
