import type { Command } from 'commander';
import { type Context, extraTrust, type Runner } from '../../context.js';
import { CliError, ExitCode, UnavailableError, UsageError } from '../../errors.js';
import { redactUrl } from '../../api/redact.js';
import { inertText } from '../../support/outside-text.js';
import { shellWord } from '../../support/shell-word.js';
import { examples } from '../common/options.js';

// `webhook relay new [RELAY]`: a new channel of a smee.io-compatible relay, for a webhook's payload
// URL, to read with `webhook listen --relay` (docs/cli.md#webhook-relay-new). The relay answers
// `/new` with a redirect to the channel; the redirect is not followed, only read.

const DEFAULT_RELAY = 'https://smee.io';
const TIMEOUT_MS = 30_000;

interface RelayNewOptions {
  relay: URL;
}

function parseRelayNew(relay: string | undefined): RelayNewOptions {
  const given = relay ?? DEFAULT_RELAY;
  const url = URL.canParse(given) ? new URL(given) : undefined;
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || url.search || url.hash) {
    throw new UsageError(`RELAY must be a relay's http(s) URL such as https://smee.io, without credentials, query or fragment, not "${redactUrl(given)}"`);
  }
  return { relay: url };
}

/** Asks the relay for a channel: HEAD <relay>/new, answered by a redirect to it on the same host. */
async function newChannel(context: Context, { relay }: RelayNewOptions): Promise<string> {
  const endpoint = new URL('new', relay.href.endsWith('/') ? relay : `${relay.href}/`);
  // Loaded when asked: undici is not needed at start-up otherwise.
  const [{ createDispatcher }, { request }, { discard, unreachable }] = await Promise.all([
    import('../../api/dispatcher.js'),
    import('../../api/undici.js'),
    import('../../webhook/relay/client.js'),
  ]);
  const dispatcher = createDispatcher(context.settings.proxy, { connectMs: TIMEOUT_MS }, extraTrust(context.settings));
  context.defer(() => dispatcher.close());
  let answer: Awaited<ReturnType<typeof request>>;
  try {
    answer = await request(endpoint, { method: 'HEAD', dispatcher, signal: context.signal, headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS });
  } catch (error) {
    if (context.signal.aborted) throw error;
    throw unreachable(`could not ask ${relay.origin} for a channel`, error, TIMEOUT_MS, 'the relay\'s URL');
  }
  discard(answer.body);
  const { statusCode } = answer;
  const location = answer.headers.location;
  if (statusCode >= 500 || statusCode === 429) {
    throw new UnavailableError(`${relay.origin} answered ${statusCode} when asked for a channel`, { hint: 'the relay is down or overloaded: try again later' });
  }
  if (statusCode < 300 || statusCode > 399 || typeof location !== 'string') {
    throw new UsageError(`${relay.origin} answered ${statusCode} to HEAD ${endpoint.pathname}, not a redirect to a new channel: is it a smee.io-compatible relay?`);
  }
  const channel = URL.canParse(location, endpoint.href) ? new URL(location, endpoint) : undefined;
  if (!channel || (channel.protocol !== 'https:' && channel.protocol !== 'http:')) {
    throw new CliError(`the relay answered a channel that is not an http(s) URL: ${inertText(location)}`, ExitCode.Unavailable);
  }
  // A channel is a capability: never one sent in the clear where the relay was asked over TLS, nor one carrying credentials.
  if (relay.protocol === 'https:' && channel.protocol !== 'https:') {
    throw new CliError(`the relay answered a channel over plain http (${inertText(redactUrl(channel.href))}) though it was asked over https: it was not used`, ExitCode.Unavailable);
  }
  if (channel.username || channel.password) throw new CliError('the relay answered a channel URL with credentials in it: it was not used', ExitCode.Unavailable);
  if (channel.host !== relay.host) {
    throw new CliError(`the relay answered a channel on another host (${inertText(channel.host)}, not ${relay.host}): it was not used`, ExitCode.Unavailable, {
      hint: 'ask the relay\'s operator, or use another relay',
    });
  }
  const url = channel.href;
  context.out.result({ channel: url }, (data) => data.channel);
  context.out.info(`paste it as the webhook's payload URL, then run: svc-migrate webhook listen --relay ${shellWord(url)}`);
  return url;
}

export function register(webhook: Command, run: Runner): void {
  const relay = webhook
    .command('relay')
    .description('relay channels: receive deliveries on a machine with no public port')
    .addHelpText('after', examples(['svc-migrate webhook relay new', 'svc-migrate webhook listen --relay https://smee.io/AbC… --secret "$SECRET" --forward-to 3000/webhooks']));
  relay
    .command('new')
    .argument('[relay]', `a smee.io-compatible relay (default ${DEFAULT_RELAY})`)
    .description('ask a relay for a new channel and print its URL, for the webhook\'s payload URL and `webhook listen --relay`')
    .addHelpText(
      'after',
      examples(['svc-migrate webhook relay new', 'svc-migrate webhook relay new https://relay.example.com', 'svc-migrate webhook relay new "$SANDBOX_URL/relay"']),
    )
    .action((given: string | undefined, _flags: unknown, command: Command) =>
      run(
        command,
        () => parseRelayNew(given),
        async (context, options) => {
          await newChannel(context, options);
        },
      ),
    );
}
