import { type Command, Option } from 'commander';
import type { Context, Runner } from '../../context.js';
import { CliError, ExitCode, UnavailableError, UsageError } from '../../errors.js';
import { terminalSafe } from '../../ui/terminal-safe.js';
import { eventSpec } from '../../webhook/catalogue.js';
import { buildDelivery, type ContentKind, MAX_PAYLOAD_BYTES } from '../../webhook/delivery.js';
import { samplePayload } from '../../webhook/samples.js';
import { readInputFile } from '../common/input.js';
import { examples, parseSeconds } from '../common/options.js';

interface SendOptions {
  url: string;
  event: string;
  action?: string;
  payload?: string;
  secret?: string;
  contentType: ContentKind;
  timeout?: number;
}

interface SendResult {
  delivery: string;
  status: number;
  ms: number;
  response: string;
}

/** `--url`: a URL, or `host:port[/path]` and a bare port meaning http:// (as `--forward-to` takes them). */
function deliveryUrl(value: string): string {
  if (/^https?:\/\//i.test(value)) return value;
  if (/^\d+$/.test(value)) return `http://127.0.0.1:${value}/`;
  if (/^(\[[0-9a-f:.]+\]|[\w.-]+):\d+(\/.*)?$/i.test(value)) return `http://${value}${value.includes('/') ? '' : '/'}`;
  throw new UsageError(`--url takes a URL such as http://127.0.0.1:8787/ (or 127.0.0.1:8787), not "${value}"`);
}

const TOO_LARGE = '; the service never delivers more than 25 MB';

/** Sends one delivery exactly as the service would (docs/service.md#delivery-headers). */
async function send(context: Context, options: SendOptions): Promise<SendResult> {
  const url = deliveryUrl(options.url);
  if (!eventSpec(options.event)) context.out.warn(`"${options.event}" is not in the event catalogue; sending it anyway`);
  let payload: Buffer | Record<string, unknown>;
  if (options.payload) {
    const raw = await readInputFile(options.payload, MAX_PAYLOAD_BYTES, '--payload', TOO_LARGE);
    payload = raw;
    if (options.action !== undefined) {
      try {
        payload = { ...(JSON.parse(raw.toString('utf8')) as Record<string, unknown>), action: options.action };
      } catch {
        throw new UsageError(`${options.payload} is not JSON, so --action cannot be set in it`);
      }
    }
  } else {
    payload = samplePayload(options.event, options.action);
  }
  const delivery = buildDelivery({
    event: options.event,
    payload,
    contentType: options.contentType,
    secret: options.secret ?? context.settings.webhookSecret,
  });
  if (delivery.body.length > MAX_PAYLOAD_BYTES) {
    throw new UsageError(`the payload is ${delivery.body.length} bytes${TOO_LARGE}`);
  }
  const { postDelivery } = await import('../../webhook/sender.js');
  let result;
  try {
    result = await postDelivery(url, delivery.headers, delivery.body, (options.timeout ?? 30) * 1000);
  } catch (error) {
    throw new UnavailableError(`could not deliver to ${url}: ${(error as Error).message}`, {
      hint: 'is the receiver running? (svc-migrate webhook listen)',
    });
  }
  const outcome: SendResult = { delivery: delivery.id, status: result.status, ms: result.ms, response: terminalSafe(result.preview) };
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
    .requiredOption('--url <url>', 'where to post it: a URL, host:port or a port on this machine')
    .requiredOption('--event <event>', 'the event name (X-Service-Event)')
    .option('--action <action>', 'set the payload\'s action')
    .option('--payload <file>', 'JSON payload (default: a published example of the event)')
    .option('--secret <secret>', 'sign with this secret (env SVC_WEBHOOK_SECRET); unsigned without one')
    .addOption(new Option('--content-type <type>', 'json or form').choices(['json', 'form']).default('json'))
    .option('--timeout <seconds>', 'give up after (default 30)', parseSeconds)
    .addHelpText(
      'after',
      examples([
        'svc-migrate webhook send --url http://127.0.0.1:8787/ --event push --secret "$SECRET"',
        'svc-migrate webhook send --url http://127.0.0.1:8787/ --event issues --action opened --content-type form',
      ]),
    )
    .action((options: SendOptions, command: Command) =>
      run(command, async (context) => {
        await send(context, options);
      }),
    );
}
