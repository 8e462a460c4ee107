import { type Command, Option } from 'commander';
import type { Context, Invocation, Runner } from '../../context.js';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { inertText } from '../../support/outside-text.js';
import { eventSpec } from '../../webhook/catalogue.js';
import type { ContentKind } from '../../webhook/delivery.js';
import { PAYLOAD_LIMIT, sendDelivery } from '../../webhook/send.js';
import { targetUrl } from '../../webhook/target-url.js';
import { readInputFile } from '../common/input.js';
import { eventNames, suggest } from '../common/completion-values.js';
import { checkNotEmpty, examples, givenSecret, parseSeconds } from '../common/options.js';

interface SendOptions {
  url: string;
  event: string;
  action?: string;
  /** The file of the payload; a published example of the event without. */
  payload?: string;
  /** --secret, else SVC_WEBHOOK_SECRET: unsigned without either. */
  secret?: string;
  contentType: ContentKind;
  timeoutMs: number;
}

/** What commander reads: the options before the timeout is a number of milliseconds. */
type SendFlags = Omit<SendOptions, 'timeoutMs'> & { timeout?: number };

function parseSendOptions(flags: SendFlags, { settings }: Invocation): SendOptions {
  const url = targetUrl(flags.url, '--url');
  checkNotEmpty(flags.payload, '--payload', 'name a JSON file, or leave --payload out to send the event\'s example');
  // `--secret "$UNSET"` would send the delivery unsigned, though a secret was meant.
  const secret = givenSecret(flags.secret, settings.webhookSecret, 'pass the webhook\'s secret, or leave --secret out to send unsigned');
  // The event goes in a header: a field value of visible characters, as every event name is.
  if (!/^[\x21-\x7e]+$/.test(flags.event)) {
    throw new UsageError(`--event must be an event name such as push or issues, not "${flags.event}"`);
  }
  return {
    url,
    event: flags.event,
    ...(flags.action === undefined ? {} : { action: flags.action }),
    ...(flags.payload === undefined ? {} : { payload: flags.payload }),
    ...(secret === undefined ? {} : { secret }),
    contentType: flags.contentType,
    timeoutMs: (flags.timeout ?? 30) * 1000,
  };
}

interface SendResult {
  delivery: string;
  status: number;
  ms: number;
  response: string;
}

/** One delivery as the service sends it (webhook/send.ts); a status other than 2xx is exit 1. */
async function send(context: Context, options: SendOptions): Promise<SendResult> {
  if (!eventSpec(options.event)) context.out.warn(`"${options.event}" is not in the event catalogue; sending it anyway`);
  const payload = options.payload ? await readInputFile(options.payload, PAYLOAD_LIMIT.bytes, '--payload', context.signal, PAYLOAD_LIMIT.why) : undefined;
  const { id, result } = await sendDelivery({ ...options, payload, signal: context.signal });
  const outcome: SendResult = { delivery: id, status: result.status, ms: result.ms, response: inertText(result.preview) };
  context.out.result(outcome, (r) => `sent ${options.event}${options.action ? `.${options.action}` : ''} ${r.delivery}: ${r.status} in ${r.ms} ms${r.response ? ` ${r.response}` : ''}`);
  if (result.status < 200 || result.status >= 300) {
    throw new CliError(`the receiver answered ${result.status}`, ExitCode.Unexpected, { status: result.status });
  }
  return outcome;
}

export function register(webhook: Command, run: Runner): void {
  webhook
    .command('send')
    .description('send one delivery as the service would: all headers, a fresh GUID, both signatures')
    .requiredOption('--url <url>', 'where to post it: a URL, host:port[/path], port[/path] or /path (this machine)')
    .addOption(suggest(new Option('--event <event>', 'the event name (X-Service-Event)').makeOptionMandatory(), eventNames))
    .option('--action <action>', 'set the payload\'s action')
    .option('--payload <file>', 'JSON payload, at most 25 MB (default: the example `webhook events <event> --example` prints)')
    .option('--secret <secret>', 'sign with this secret (env SVC_WEBHOOK_SECRET); unsigned without one')
    .addOption(new Option('--content-type <type>', 'body encoding').choices(['json', 'form']).default('json'))
    .option('--timeout <seconds>', 'give up after this many seconds (default 30)', parseSeconds)
    .addHelpText(
      'after',
      examples([
        'svc-migrate webhook send --url http://127.0.0.1:8787/ --event push --secret "$SECRET"',
        'svc-migrate webhook send --url http://127.0.0.1:8787/ --event issues --action opened --content-type form',
      ]),
    )
    .action((flags: SendFlags, command: Command) =>
      run(
        command,
        (invocation) => parseSendOptions(flags, invocation),
        async (context, options) => {
          await send(context, options);
        },
      ),
    );
}
