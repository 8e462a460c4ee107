import { resolve } from 'node:path';
import { type Command, Help, Option } from 'commander';
import type { Context, Invocation, Runner } from '../../context.js';
import { CliError, ExitCode, InterruptedError, UsageError } from '../../errors.js';
import { isLoopbackHost } from '../../api/transport-policy.js';
import { isSystemError, portError } from '../../support/system-errors.js';
import { inertText } from '../../support/outside-text.js';
import { deliveryJson, deliveryLine, rejectionLine } from '../../ui/webhook.js';
import { type EventFilter, parseEventFilter } from '../../webhook/catalogue.js';
import { shownHeader } from '../../webhook/forward-headers.js';
import { promptRefused } from '../../ui/prompt.js';
import { DEFAULT_KEEP } from '../../webhook/inspector/log.js';
import { type ListenSummary, startListener } from '../../webhook/listener.js';
import { DEFAULT_MAX_CONNECTIONS, type ReceivedDelivery } from '../../webhook/receiver.js';
import { type DeliveryStore, openStore, StoreError } from '../../webhook/store.js';
import { eventNames, suggest } from '../common/completion-values.js';
import { checkedSecret, checkNotEmpty, envSecret, examples, parsePort, parsePositiveInt } from '../common/options.js';
import {
  addForwardOptions,
  type ForwardFlags,
  type ForwardOptions,
  finishingLine,
  forwardCounts,
  forwardingLines,
  givenUpNone,
  notForwarded,
  openForwardJournal,
  pageForwards,
  parseForwardOptions,
} from './listen-forwards.js';
import { parseRelayFlag, relayGapLines, relayListening, relayLostAtEnd, relayOption, relaySummary, sourceLine } from './listen-relay.js';

interface ListenFlags extends ForwardFlags {
  port: number;
  host: string;
  path: string;
  /** Values of --secret; `true` when given without a value (then it is asked for). */
  secret?: (string | true)[];
  events?: string;
  save?: string;
  maxDeliveries?: number;
  dedupe: boolean;
  forwardQueue: number;
  maxConnections: number;
  /** `--inspect` alone: a free port. */
  inspect?: number | true;
  inspectKeep?: number;
  relay?: string;
}

/** The flags that are read into something else. */
type ReadFlags = 'secret' | 'events' | keyof ForwardFlags | 'inspect' | 'inspectKeep';

interface ListenOptions extends Omit<ListenFlags, ReadFlags> {
  /** Each --secret checked, in order; `true` for one to ask for. */
  secrets: (string | true)[];
  /** SVC_WEBHOOK_SECRET, checked. */
  envSecret?: string;
  filters: EventFilter[];
  forward?: ForwardOptions;
  inspect?: { port: number; keep: number };
  /** False with --relay and no --port: no port is bound. */
  serve?: false;
}

/** What commander hands the parser for a bare `--secret`: a NUL, which no argument can contain. */
const ASK = '\u0000';

const EMPTY_SECRET_HINT = 'pass the webhook\'s secret, or leave --secret out to accept unverified deliveries';

/** Every --secret checked in order, and SVC_WEBHOOK_SECRET: `--secret "$UNSET"` would verify with a key nobody chose. */
function checkSecretFlags(given: (string | true)[], invocation: Invocation): Pick<ListenOptions, 'secrets' | 'envSecret'> {
  const secrets = given.map((value) => {
    if (value === true && !invocation.settings.interactive) throw promptRefused(SECRET_ASKED.what, SECRET_ASKED.flag);
    return value === true ? value : checkedSecret(value, '--secret', EMPTY_SECRET_HINT);
  });
  const fromEnv = envSecret(invocation.settings.webhookSecret);
  return { secrets, ...(fromEnv === undefined ? {} : { envSecret: fromEnv }) };
}

/** How the prompt for a secret names what it asks for, and what gives it instead. */
const SECRET_ASKED = { what: 'a webhook secret', flag: '--secret <value> or SVC_WEBHOOK_SECRET' };

/** The secrets to verify with: those given, those asked for (each checked), then SVC_WEBHOOK_SECRET's. */
async function collectSecrets(context: Context, options: ListenOptions): Promise<string[]> {
  const secrets: string[] = [];
  for (const value of options.secrets) {
    if (value !== true) secrets.push(value);
    else {
      const check = (answer: string) => checkedSecret(answer, 'the secret entered', EMPTY_SECRET_HINT);
      secrets.push(check(await context.prompt.secret('Webhook secret', SECRET_ASKED.flag, SECRET_ASKED.what, check)));
    }
  }
  if (options.envSecret !== undefined && !secrets.includes(options.envSecret)) secrets.push(options.envSecret);
  return secrets;
}

/** Every flag of `listen` read and checked before the receiver starts: nothing asked, bound or created. */
function parseListenOptions(flags: ListenFlags, invocation: Invocation, command: Command): ListenOptions {
  const { secret, events, inspect, inspectKeep, ...others } = flags;
  const { forwardTo, forwardTimeout, forwardConcurrency, forwardHeader, forwardRetries, ...kept } = others;
  // The path a sender posts to: a request-target's path, which no query, fragment or space can be part of.
  if (!/^\/[\x21-\x7e]*$/.test(kept.path) || /[?#]/.test(kept.path)) throw new UsageError(`--path must be a path such as / or /hooks, not "${kept.path}"`);
  // `--host "$UNSET"` would bind every interface.
  if (kept.host.trim() === '') throw new UsageError('--host is empty', { hint: 'name the address to bind: 127.0.0.1 (the default), or 0.0.0.0 for every interface' });
  checkNotEmpty(kept.save, '--save', 'name the directory to save deliveries in, or leave --save out');
  let filters: EventFilter[] = [];
  try {
    filters = events === undefined ? [] : parseEventFilter(events);
  } catch (error) {
    throw new UsageError(`--events: ${(error as Error).message}`, { hint: 'run `svc-migrate webhook events` for the catalogue' });
  }
  // `--events "$UNSET"` would show every event.
  if (events !== undefined && filters.length === 0) throw new UsageError('--events lists no events', { hint: 'name events such as push,issues.opened, or leave --events out for all' });
  if (inspectKeep !== undefined && inspect === undefined) {
    throw new UsageError('--inspect-keep is used only with --inspect', { hint: 'add --inspect to serve the page, or leave --inspect-keep out' });
  }
  const forward = parseForwardOptions({ forwardTo, forwardTimeout, forwardConcurrency, forwardHeader, forwardRetries });
  return {
    ...kept,
    ...checkSecretFlags(secret ?? [], invocation),
    ...parseRelayFlag(kept.relay, command),
    filters,
    ...(forward === undefined ? {} : { forward }),
    ...(inspect === undefined ? {} : { inspect: { port: inspect === true ? 0 : inspect, keep: inspectKeep ?? DEFAULT_KEEP } }),
  };
}

/** The verifying receiver: answers fast, saves before answering, prints and forwards after. */
async function listen(context: Context, options: ListenOptions): Promise<ListenSummary> {
  const { out } = context;
  const { forward } = options;
  const target = forward?.target;
  const shownTarget = forward?.shown;
  const retries = forward?.retries ?? 0;
  // Asked for only once every flag is known to be usable.
  const secrets = await collectSecrets(context, options);
  let store: DeliveryStore | undefined;
  if (options.save) {
    try {
      store = await openStore(options.save);
    } catch (error) {
      if (error instanceof StoreError) throw new UsageError(error.message, error.hint === undefined ? {} : { hint: error.hint });
      throw error;
    }
    const where = inertText(store.resolved === resolve(options.save) ? options.save : `${options.save} (${store.resolved})`);
    if (store.tightened) out.warn(`${where} was open to other users; it is now 0700 (saved deliveries hold private payloads)`);
  }
  const journal = store && forward ? await openForwardJournal(context, store.resolved) : undefined;
  const inspection =
    options.inspect === undefined
      ? undefined
      : await (await import('../common/inspector.js')).inspectListener({ ...options.inspect, secrets, forward, saveDir: options.save });
  if (inspection) context.defer(() => inspection.inspector.close());
  let lastDropWarning = Number.NEGATIVE_INFINITY;
  let unreported = 0;
  let dropReportDue = false;
  const reportDrops = () => {
    lastDropWarning = context.clock.now();
    out.warn(`${options.maxConnections} connections are open: closed ${unreported} more on arrival (--max-connections)`);
    unreported = 0;
  };
  /** Deliveries answered but not forwarded: given up after their attempts, or left out of a full queue. */
  const givenUp = givenUpNone();
  const listener = await startListener(
    {
      host: options.host,
      port: options.port,
      path: options.path,
      serve: options.serve,
      relay: await relayListening(context, options.relay),
      secrets,
      dedupe: options.dedupe,
      // Without a secret, a web page could rebind its name to this address and post: only loopback names then.
      maxConnections: options.maxConnections,
      filters: options.filters,
      store,
      journal,
      forward: forward ? { ...forward, maxWaiting: options.forwardQueue } : undefined,
      maxDeliveries: options.maxDeliveries,
      signal: context.signal,
      clock: context.clock,
      outputBehind: () => out.behind(),
      observer: inspection?.observer,
    },
    {
      // A burst of deliveries is printed with one write.
      onDeliveries: (deliveries) => out.together(() => deliveries.forEach((delivery) => printDelivery(context, delivery, secrets.length))),
      onRejection(rejection) {
        // Counted in the summary; not printed while stderr is not being read (a flood would pile up).
        if (!out.behind('stderr')) out.warn(rejectionLine(rejection));
      },
      onDrop() {
        unreported++;
        // At most one line in ten seconds: a flood of connections must not become a flood of output.
        // Those closed meanwhile are told at the end of the ten seconds, and in the summary.
        const wait = lastDropWarning + 10_000 - context.clock.now();
        if (wait <= 0) return reportDrops();
        if (dropReportDue) return;
        dropReportDue = true;
        context.clock.sleep(wait, context.signal).then(
          () => {
            dropReportDue = false;
            if (unreported > 0) reportDrops();
          },
          () => {},
        );
      },
      onFault: (error) => out.warn(`could not print or forward a delivery (it was answered and saved): ${inertText((error as Error)?.message ?? String(error))}`),
      onFinishingForwards: (waiting) => out.info(finishingLine(waiting, shownTarget ?? '', (forward?.timeoutMs ?? 0) / 1000, retries, context.signal.aborted)),
      forwarding: forwardingLines(context, shownTarget ?? '', options.save, givenUp),
      onRelayGap: relayGapLines(context),
    },
  ).catch((error: unknown) => {
    throw isSystemError(error) ? portError(error, { port: options.port, host: options.host, flag: '--port' }) : error;
  });

  out.essential(`${sourceLine(listener.url, options.relay)}${shownTarget ? `, forwarding to ${shownTarget}` : ''}${options.save ? `, saving to ${options.save}` : ''}`);
  if (inspection) {
    inspection.source.where = listener.url ?? options.relay ?? '';
    inspection.receiver.redeliver = listener.redeliver;
    inspection.forwards.told = pageForwards(givenUp, journal, listener.savedAs, shownTarget ?? '');
    // The one place the token is shown: whoever has this address can read every delivery.
    out.essential(`inspector on ${inspection.inspector.url}`);
  }
  const forwardNotes = [
    forward && forward.headers.length > 0 ? `each forward adds ${inertText(forward.headers.map(shownHeader).join(', '))}` : '',
    retries > 0 ? `a failed forward is tried again up to ${retries} time${retries > 1 ? 's' : ''}` : '',
  ].filter(Boolean);
  if (forwardNotes.length > 0) out.info(forwardNotes.join('; '));
  if (secrets.length === 0) {
    out.warn('no secret: every delivery is accepted and marked unverified (pass --secret or set SVC_WEBHOOK_SECRET)');
    if (options.serve !== false && !isLoopbackHost(options.host)) out.warn(`listening on ${options.host}, beyond loopback, without a secret: anyone who can reach it can post`);
  } else {
    out.info(`verifying X-Hub-Signature-256 with ${secrets.length} secret${secrets.length > 1 ? 's' : ''}`);
  }

  const { summary, interrupted } = await listener.finished;
  // The page's replays end (each outcome journaled and counted) before the journal closes and the summary is said.
  await inspection?.inspector.close();
  await journal?.close();
  out.info(
    `received ${summary.received}, verified ${summary.verified}, rejected ${summary.rejected}, duplicates ${summary.duplicates}` +
      (target ? forwardCounts(summary, givenUp.fromPage) : '') +
      (summary.filtered > 0 ? `, left out by --events ${summary.filtered}` : '') +
      (summary.dropped > 0 ? `, connections closed on arrival ${summary.dropped}` : '') +
      relaySummary(summary, options.relay),
  );
  relayLostAtEnd(context, summary);
  const unforwarded = givenUp.count > 0 ? notForwarded(givenUp, shownTarget ?? '', target === shownTarget, options.save) : undefined;
  // Ctrl-C ends a receiver as it ends any command: exit 130 (the summary above says what it got).
  if (interrupted) {
    if (unforwarded) out.warn(inertText(`${unforwarded.message}; ${unforwarded.hint}`));
    throw new InterruptedError('');
  }
  // A session that ended as asked, but with a delivery its app never got, is no success.
  if (unforwarded) throw new CliError(unforwarded.message, ExitCode.Unexpected, { hint: unforwarded.hint });
  return summary;
}

/** One line per delivery, whatever its payload; a line that cannot be drawn at all is replaced by a warning. */
function printDelivery(context: Context, delivery: ReceivedDelivery, secretCount: number): void {
  const { out } = context;
  try {
    out.lineOf(() => deliveryJson(delivery), () => deliveryLine(delivery, out.theme, secretCount));
  } catch (error) {
    out.warn(`delivery ${inertText(delivery.id)} (${inertText(delivery.event)}) was accepted, but cannot be printed: ${inertText((error as Error).message)}`);
  }
}

export function register(webhook: Command, run: Runner): void {
  const command = webhook.command('listen');
  // `--secret` with no value asks for it: ASK is how commander tells us, not something to show.
  command.configureHelp({
    ...command.configureHelp(),
    optionDescription(this: Help, option: Option): string {
      return Help.prototype.optionDescription.call(this, option).replace(` (preset: ${JSON.stringify(ASK)})`, '');
    },
  });
  command
    .description('receive deliveries locally: verify signatures, check them against the catalogue, print, save, forward')
    .option('--port <n>', 'port (0 picks a free one)', parsePort, 8787)
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--path <path>', 'path deliveries are posted to', '/')
    .addOption(relayOption())
    .addOption(
      new Option('--secret [secret]', 'webhook secret; repeat for a rotation; no value asks for it (env SVC_WEBHOOK_SECRET)')
        .preset(ASK)
        .argParser((value: string, previous: (string | true)[] = []) => [...previous, value === ASK ? (true as const) : value]),
    )
    .addOption(suggest(new Option('--events <list>', 'only these events or event.action pairs, comma separated'), eventNames, true));
  addForwardOptions(command)
    .option('--save <dir>', 'save each accepted delivery (headers + raw body) before answering')
    .option('--max-deliveries <n>', 'exit after n accepted deliveries: 0, or 1 if one was not forwarded', parsePositiveInt)
    .option('--no-dedupe', 'treat redeliveries (same X-Service-Delivery) as new')
    .option('--forward-queue <n>', 'deliveries waiting to be forwarded, at most (and 256 MiB of them); beyond, they are saved but not forwarded', parsePositiveInt, 10_000)
    .option('--max-connections <n>', 'connections open at once; more are closed on arrival', parsePositiveInt, DEFAULT_MAX_CONNECTIONS)
    .option('--inspect [port]', 'also serve a live page of the deliveries on 127.0.0.1 (default: a free port)', parsePort)
    .option('--inspect-keep <n>', `deliveries the page keeps in memory (default ${DEFAULT_KEEP}; needs --inspect)`, parsePositiveInt)
    .addHelpText(
      'after',
      examples([
        'svc-migrate webhook listen --secret "$SECRET" --forward-to 3000/webhooks',
        'svc-migrate webhook listen --forward-to 3000/webhooks --forward-retries 3 --forward-header "Authorization: Bearer $APP_TOKEN" --save deliveries/',
        'svc-migrate webhook listen --port 0 --save deliveries/ --json --max-deliveries 1',
        'svc-migrate webhook listen --secret old --secret new --events push,pull_request.opened',
        'svc-migrate webhook listen --secret "$SECRET" --forward-to 3000/webhooks --inspect',
        'svc-migrate webhook listen --relay https://smee.io/abc123 --secret "$SECRET" --forward-to 3000/webhooks',
      ]),
    )
    .action((flags: ListenFlags, command: Command) =>
      run(
        command,
        (invocation) => parseListenOptions(flags, invocation, command),
        async (context, options) => {
          await listen(context, options);
        },
      ),
    );
}
