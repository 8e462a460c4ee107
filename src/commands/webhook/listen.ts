import type { Command } from 'commander';
import type { Context, Runner } from '../../context.js';
import { UsageError } from '../../errors.js';
import { deliveryLine, deliveryRecord, rejectionLine } from '../../ui/webhook.js';
import { parseEventFilter } from '../../webhook/catalogue.js';
import { type ReceivedDelivery, startReceiver } from '../../webhook/receiver.js';
import { saveDelivery } from '../../webhook/store.js';
import { parseNonNegativeInt, parsePositiveInt, parseSeconds } from '../common/options.js';

interface ListenOptions {
  port: number;
  host: string;
  path: string;
  /** Values of --secret; `true` when given without a value (then it is asked for). */
  secret?: (string | true)[];
  events?: string;
  forwardTo?: string;
  forwardTimeout?: number;
  save?: string;
  maxDeliveries?: number;
  dedupe: boolean;
}

interface ListenSummary {
  received: number;
  verified: number;
  rejected: number;
  duplicates: number;
  forwarded: number;
  forward_failed: number;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

/** `3000`, `:3000/hooks`, `/hooks` or `localhost:3000/x` mean this machine; full URLs stay as they are. */
export function forwardUrl(target: string): string {
  if (/^https?:\/\//i.test(target)) return target;
  const match = /^(?:(localhost|127\.0\.0\.1)?:?(\d+))?(\/.*)?$/.exec(target);
  if (!match || (!match[2] && !match[3])) throw new UsageError(`--forward-to takes a URL, a port or a path, not "${target}"`);
  return `http://${match[1] ?? 'localhost'}${match[2] ? `:${match[2]}` : ''}${match[3] ?? '/'}`;
}

async function collectSecrets(context: Context, given: (string | true)[] | undefined): Promise<string[]> {
  const secrets: string[] = [];
  for (const value of given ?? []) {
    if (value === true) secrets.push(await context.prompt.secret('Webhook secret', '--secret <value> or SVC_WEBHOOK_SECRET'));
    else secrets.push(value);
  }
  const fromEnv = context.io.env.SVC_WEBHOOK_SECRET;
  if (fromEnv && !secrets.includes(fromEnv)) secrets.push(fromEnv);
  return secrets;
}

/** The verifying receiver: answers fast, saves before answering, prints and forwards after. */
async function listen(context: Context, options: ListenOptions): Promise<ListenSummary> {
  const { out } = context;
  const secrets = await collectSecrets(context, options.secret);
  let filters: ReturnType<typeof parseEventFilter> = [];
  try {
    filters = options.events ? parseEventFilter(options.events) : [];
  } catch (error) {
    throw new UsageError(`--events: ${(error as Error).message}`, { hint: 'run `svc-migrate webhook events` for the catalogue' });
  }
  const wanted = (delivery: ReceivedDelivery) =>
    filters.length === 0 || filters.some((f) => f.event === delivery.event && (f.action === undefined || f.action === delivery.action));
  const target = options.forwardTo ? forwardUrl(options.forwardTo) : undefined;
  const summary: ListenSummary = { received: 0, verified: 0, rejected: 0, duplicates: 0, forwarded: 0, forward_failed: 0 };
  let forwarding: Promise<void> = Promise.resolve();
  let accepted = 0;
  let stop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });

  const receiver = await startReceiver({
    host: options.host,
    port: options.port,
    path: options.path,
    secrets,
    dedupe: options.dedupe,
    accept(delivery) {
      // Without --save nothing is awaited: the answer goes out in this turn.
      if (options.save && wanted(delivery) && !delivery.duplicate) return saveDelivery(options.save, delivery);
    },
    delivered(deliveries) {
      // A burst of deliveries is printed with one write.
      out.together(() => {
        for (const delivery of deliveries) {
          summary.received++;
          if (delivery.verification.verified) summary.verified++;
          if (delivery.duplicate) summary.duplicates++;
          if (!wanted(delivery)) continue;
          printDelivery(context, delivery, secrets.length);
          if (target && !delivery.duplicate) {
            // In arrival order, one after the other, and never before the service got its answer.
            forwarding = forwarding.then(() => forward(context, target, delivery, options.forwardTimeout ?? 30, summary));
          }
          accepted++;
          if (options.maxDeliveries !== undefined && accepted >= options.maxDeliveries) stop();
        }
      });
    },
    onRejection(rejection) {
      summary.rejected++;
      out.warn(rejectionLine(rejection));
    },
  });

  out.essential(`listening on ${receiver.url}${target ? `, forwarding to ${target}` : ''}${options.save ? `, saving to ${options.save}` : ''}`);
  if (secrets.length === 0) {
    out.warn('no secret: every delivery is accepted and marked unverified (pass --secret or set SVC_WEBHOOK_SECRET)');
    if (!LOOPBACK.test(options.host)) out.warn(`listening on ${options.host}, beyond loopback, without a secret: anyone who can reach it can post`);
  } else {
    out.info(`verifying X-Hub-Signature-256 with ${secrets.length} secret${secrets.length > 1 ? 's' : ''}`);
  }

  const onAbort = () => stop();
  context.signal.addEventListener('abort', onAbort, { once: true });
  try {
    await stopped;
  } finally {
    context.signal.removeEventListener('abort', onAbort);
    await receiver.close();
    await forwarding;
  }
  out.info(
    `received ${summary.received}, verified ${summary.verified}, rejected ${summary.rejected}, duplicates ${summary.duplicates}` +
      (target ? `, forwarded ${summary.forwarded}, forward failures ${summary.forward_failed}` : ''),
  );
  return summary;
}

/** One line per delivery; a payload too deep to serialize is left out rather than lost with the line. */
function printDelivery(context: Context, delivery: ReceivedDelivery, secretCount: number): void {
  const { out } = context;
  const human = () => deliveryLine(delivery, out.theme, secretCount);
  try {
    out.line(deliveryRecord(delivery), human);
  } catch {
    const record = { ...deliveryRecord(delivery), payload: null };
    record.warnings = [...record.warnings, 'payload too deeply nested to print; it is saved as received'];
    out.line(record, human);
  }
}

async function forward(context: Context, target: string, delivery: ReceivedDelivery, timeoutSeconds: number, summary: ListenSummary) {
  const { postDelivery, sendableHeaders } = await import('../../webhook/sender.js');
  try {
    const result = await postDelivery(target, sendableHeaders(delivery.rawHeaders), delivery.rawBody, timeoutSeconds * 1000);
    summary.forwarded++;
    context.out.info(`  → ${target} ${result.status} in ${result.ms} ms${result.preview ? `: ${result.preview.replace(/\s+/g, ' ')}` : ''}`);
  } catch (error) {
    summary.forward_failed++;
    context.out.warn(`  → ${target} failed for ${delivery.id}: ${(error as Error).message}${context.out.json ? '' : ' (the delivery was still answered 2xx)'}`);
  }
}

export function register(webhook: Command, run: Runner): void {
  webhook
    .command('listen')
    .description('receive deliveries locally: verify signatures, check them against the catalogue, print, save, forward')
    .option('--port <n>', 'port (0 picks a free one)', parseNonNegativeInt, 8787)
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--path <path>', 'path deliveries are posted to', '/')
    .option('--secret [secret]', 'webhook secret; repeat for a rotation; no value asks for it (env SVC_WEBHOOK_SECRET)', (value: string | true, previous: (string | true)[] = []) => [...previous, value])
    .option('--events <list>', 'only these events or event.action pairs, comma separated')
    .option('--forward-to <url>', 're-post each delivery here (a port or path means localhost)')
    .option('--forward-timeout <seconds>', 'timeout of each forward (default 30)', parseSeconds)
    .option('--save <dir>', 'save each accepted delivery (headers + raw body) before answering')
    .option('--max-deliveries <n>', 'exit 0 after n accepted deliveries', parsePositiveInt)
    .option('--no-dedupe', 'treat redeliveries (same X-Service-Delivery) as new')
    .addHelpText(
      'after',
      `
Examples:
  svc-migrate webhook listen --secret "$SECRET" --forward-to 3000/webhooks
  svc-migrate webhook listen --port 0 --save deliveries/ --json --max-deliveries 1
  svc-migrate webhook listen --secret old --secret new --events push,pull_request.opened`,
    )
    .action((options: ListenOptions, command: Command) =>
      run(command, async (context) => {
        await listen(context, options);
      }),
    );
}
