import { InvalidArgumentError, type Command } from 'commander';
import type { Context } from '../../context.js';
import { UsageError } from '../../errors.js';
import { redactUrl } from '../../api/redact.js';
import { inertText } from '../../support/outside-text.js';
import { shellWord } from '../../support/shell-word.js';
import { forwardJson, forwardLine } from '../../ui/webhook.js';
import { type ForwardHeader, parseForwardHeaders } from '../../webhook/forward-headers.js';
import { JOURNAL_NAME, JournalError, type JournalWriter, openJournal } from '../../webhook/forward-journal.js';
import { type ForwarderEvents, type ForwardPace, type ForwardRecord, SERVICE_TIMEOUT_MS } from '../../webhook/forwarder.js';
import { targetUrl } from '../../webhook/target-url.js';
import type { PageForward } from '../../webhook/inspector/replay.js';
import type { ListenSummary } from '../../webhook/listener.js';
import type { ReceivedDelivery } from '../../webhook/receiver.js';
import { parseNonNegativeInt, parseSeconds } from '../common/options.js';

// `webhook listen`'s forwarding: its flags, its lines, and what the end of a session says of the
// deliveries not forwarded (listen.ts runs the session).

export interface ForwardFlags {
  forwardTo?: string;
  forwardTimeout?: number;
  forwardConcurrency?: number;
  forwardHeader?: string[];
  forwardRetries?: number;
}

/** `shown`: the target as printed, a password or token in its URL left out. */
export interface ForwardOptions {
  target: string;
  shown: string;
  timeoutMs: number;
  concurrency: number;
  headers: ForwardHeader[];
  retries: number;
}

/** Retries of a forward at most: with waits up to 30 s each, 20 hold a delivery (and its slot) about 8 minutes. */
const MAX_RETRIES = 20;
const DEFAULT_CONCURRENCY = 8;
const MAX_CONCURRENCY = 64;

function parseRetries(value: string): number {
  const retries = parseNonNegativeInt(value);
  if (retries > MAX_RETRIES) throw new InvalidArgumentError(`expected a number of retries from 0 to ${MAX_RETRIES}, not "${value}"`);
  return retries;
}

function parseConcurrency(value: string): number {
  if (!/^\d{1,3}$/.test(value) || Number(value) < 1 || Number(value) > MAX_CONCURRENCY) {
    throw new InvalidArgumentError(`expected a number of forwards at once from 1 to ${MAX_CONCURRENCY}, not "${value}"`);
  }
  return Number(value);
}

/** The forwarding flags, in the place of `listen --help` they hold. */
export function addForwardOptions(command: Command): Command {
  return command
    .option('--forward-to <url>', 're-post each delivery here: a URL, host:port[/path], port[/path] or /path (this machine)')
    .option('--forward-timeout <seconds>', `time limit of each forward attempt (default ${SERVICE_TIMEOUT_MS / 1000}, as the service's own)`, parseSeconds)
    .option(
      '--forward-concurrency <n>',
      `forwards under way at once, 1 to ${MAX_CONCURRENCY} (default ${DEFAULT_CONCURRENCY}); above 1 they may end out of arrival order (needs --forward-to)`,
      parseConcurrency,
    )
    .option('--forward-retries <n>', 'try a failed forward (no answer, or not 2xx) again up to n times, waiting longer each time (default 0; needs --forward-to)', parseRetries)
    .option('--forward-header <header>', 'add \'Name: value\' to every forward; repeat for more (needs --forward-to)', (value: string, previous: string[] = []) => [...previous, value]);
}

/** The forwarding flags read and checked; undefined without --forward-to. */
export function parseForwardOptions(flags: ForwardFlags): ForwardOptions | undefined {
  const { forwardTo, forwardTimeout, forwardConcurrency, forwardHeader, forwardRetries } = flags;
  // `--forward-to "$UNSET"` is a mistake to say, not forwarding turned off.
  const target = forwardTo !== undefined ? targetUrl(forwardTo, '--forward-to') : undefined;
  const needing = [['--forward-header', forwardHeader], ['--forward-retries', forwardRetries], ['--forward-concurrency', forwardConcurrency]] as const;
  for (const [flag, given] of needing) {
    if (given !== undefined && target === undefined) throw new UsageError(`${flag} needs --forward-to`, { hint: 'add --forward-to with your app\'s port and path, or leave it out' });
  }
  const headers = parseForwardHeaders(forwardHeader ?? [], target !== undefined && /^[^:]+:\/\/[^/?#]*@/.test(target));
  if (target === undefined) return undefined;
  const timeoutMs = forwardTimeout === undefined ? SERVICE_TIMEOUT_MS : forwardTimeout * 1000;
  const concurrency = forwardConcurrency ?? DEFAULT_CONCURRENCY;
  return { target, shown: redactUrl(target), timeoutMs, concurrency, headers, retries: forwardRetries ?? 0 };
}

/** `<save dir>/forwards.jsonl` opened to append to; one that is not safe to write is the user's to fix. */
export async function openForwardJournal(context: Context, dir: string): Promise<JournalWriter> {
  try {
    return await openJournal(dir, (error) => context.out.warn(`${inertText(error.message)}: forward outcomes are no longer recorded (the deliveries are still saved)`));
  } catch (error) {
    if (error instanceof JournalError) throw new UsageError(inertText(error.message), { hint: `remove or rename ${JOURNAL_NAME}, or save to another directory` });
    throw error;
  }
}

const atOnce = (n: number) => (n > 1 ? `${n} forwards at once` : 'one forward at a time');

/** Why the forward queue is full: the app (silent, failing or slow), or the forwarder (too few at once, or too small a queue). */
function behindLine(target: string, waiting: number, pace: ForwardPace): string {
  const wait = waiting > 1 ? `${waiting} deliveries wait` : '1 delivery waits';
  const full = `the forward queue is full (${wait}, --forward-queue): new deliveries are answered but not forwarded until it empties`;
  const app = 'your app is the bottleneck';
  // How fast the app answers, as measured: the mean of its recent answers, or none yet.
  let measured = `${target} answers in ${pace.averageMs} ms on average (its last ${pace.answered === 1 ? 'answer' : `${pace.answered} answers`})`;
  if (pace.firstOnly) measured = `${target} answered its first forward in ${pace.averageMs} ms, the connection's set-up included`;
  switch (pace.bottleneck) {
    case 'silent':
      return `${full}; ${target} has answered none of the ${pace.running} forwards under way, the first for ${pace.waitedMs} ms: ${app}`;
    case 'failing':
      return `${full}; ${target} failed ${pace.failed} of its last ${pace.ended} forwards: ${app}`;
    case 'slow':
      return `${full}; ${target} answers in ${pace.averageMs} ms on average (${pace.running} at once): ${app}`;
    case 'concurrency':
      return `${full}; ${measured}, but deliveries arrive faster than ${atOnce(pace.concurrency)} send them: raise --forward-concurrency`;
    case 'early':
      return `${full}; ${target} has answered none of the ${pace.running} forwards under way yet, the first sent ${pace.waitedMs} ms ago: too soon to tell whether your app or the forwarder holds them back (a fast app: raise --forward-concurrency or --forward-queue)`;
  }
}

/**
 * What the end of a session says of the deliveries not forwarded: how many, and the first ids it
 * names. Only so many are kept: a session left running for days against an app that is down must
 * not grow by a record for each delivery.
 */
export interface GivenUp {
  count: number;
  /** The first deliveries given up, by arrival number (NAMES_KEPT at most): one the page then delivers is taken out. */
  named: Map<number, string>;
  /** Those of them saved (`--save`): `webhook replay --failed` can send them. */
  saved: number;
  /** Deliveries given up that the inspector's page then delivered, by how they had ended. */
  fromPage: { failed: number; not_forwarded: number };
}

export const givenUpNone = (): GivenUp => ({ count: 0, named: new Map(), saved: 0, fromPage: { failed: 0, not_forwarded: 0 } });

/** Ids shown in the message about deliveries not forwarded, at most; the rest are counted. */
const IDS_SHOWN = 10;
/** Ids kept to name: more than shown, so that some are left to name once the page delivered the first. */
const NAMES_KEPT = 1_000;

function keepGivenUp(givenUp: GivenUp, record: ForwardRecord): void {
  givenUp.count++;
  if (givenUp.named.size < NAMES_KEPT) givenUp.named.set(record.sequence, record.delivery);
  if (record.saved !== null) givenUp.saved++;
}

/**
 * The page's replays to the forward target (`--inspect`): each of a saved delivery appended to the
 * journal as the forwarder's outcomes are, and a delivery given up that the page delivered no
 * longer given up (the summary, the ids named, the exit code).
 */
export function pageForwards(
  givenUp: GivenUp,
  journal: JournalWriter | undefined,
  savedAs: (delivery: ReceivedDelivery) => string | undefined,
  target: string,
): (forward: PageForward) => void {
  return ({ record, delivered, givenUp: ended, status, at }: PageForward) => {
    const delivery = record.delivery;
    if (delivery === undefined) return;
    const file = savedAs(delivery);
    if (journal && file !== undefined) journal.append({ file, delivery: delivery.id, outcome: delivered ? 'delivered' : 'failed', status, at, target });
    if (!delivered || ended === undefined) return;
    givenUp.count--;
    givenUp.named.delete(delivery.sequence);
    if (file !== undefined) givenUp.saved--;
    givenUp.fromPage[ended]++;
  };
}

/** The summary's forward counts, those the page delivered counted as such. */
export function forwardCounts(summary: ListenSummary, fromPage: GivenUp['fromPage']): string {
  const failed = summary.forward_failed - fromPage.failed;
  const skipped = summary.forward_skipped - fromPage.not_forwarded;
  const page = fromPage.failed + fromPage.not_forwarded;
  return (
    `; forwards delivered ${summary.forward_delivered}, failed ${failed}, retried ${summary.forward_retried}` +
    (skipped > 0 ? `, not forwarded ${skipped}` : '') +
    (page > 0 ? `, delivered from the inspector's page ${page}` : '')
  );
}

/**
 * What the user reads of forwarding, from each forward's record: an attempt answered 2xx as a line,
 * a failure, a retry and a delivery given up as a warning (each with the delivery's id), and with
 * --json the record itself on stdout; also when the queue fills, and why.
 */
export function forwardingLines(context: Context, target: string, saveDir: string | undefined, givenUp: GivenUp): Omit<ForwarderEvents, 'onFault'> {
  const { out } = context;
  const where = saveDir ? `saved in ${inertText(saveDir)}; \`webhook replay --failed\` can send it later` : 'not saved (use --save to keep such deliveries)';
  return {
    onForward(record) {
      out.jsonLine(forwardJson(record));
      const line = forwardLine(record, out.theme);
      if (record.outcome === 'delivered') return out.info(line);
      if (record.outcome === 'retrying') return out.warn(line);
      keepGivenUp(givenUp, record);
      if (record.outcome === 'not_forwarded') return out.warn(`${line}, ${where}`);
      out.warn(`${line} (${saveDir ? where : 'not saved: use --save to keep such deliveries'})`);
    },
    onBehind: (waiting, pace) => out.warn(behindLine(target, waiting, pace)),
    onCaughtUp: (skipped) => out.info(`the forward queue to ${target} emptied; ${skipped} deliveries were not forwarded`),
  };
}

/** What `finishing N forwards` adds: how long each may take, and what Ctrl-C does now. */
export function finishingLine(waiting: number, target: string, timeoutSeconds: number, retries: number, interrupted: boolean): string {
  const each = `each up to ${timeoutSeconds} s`;
  const what = `finishing ${waiting} forward${waiting > 1 ? 's' : ''} to ${target}`;
  if (interrupted) return `${what} (${each}${retries > 0 ? ', not tried again' : ''}; Ctrl-C again to stop now)`;
  if (retries === 0) return `${what} (${each}; Ctrl-C twice to stop now)`;
  return `${what} (${each}, tried again up to ${retries} time${retries > 1 ? 's' : ''}; Ctrl-C to stop trying again, twice to stop now)`;
}

/** The message and hint about deliveries answered but never forwarded: which, and how to send them again. */
export function notForwarded(
  givenUp: GivenUp,
  target: string,
  wholeTarget: boolean,
  saveDir: string | undefined,
): { message: string; hint: string } {
  const { count } = givenUp;
  const ids = [...givenUp.named.values()].slice(0, IDS_SHOWN);
  const more = count - ids.length;
  const named = ids.length === 0 ? '' : `: ${ids.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
  const message = `${count} deliver${count > 1 ? 'ies were' : 'y was'} answered but not forwarded to ${target}${named}`;
  if (saveDir === undefined || givenUp.saved === 0) {
    return { message, hint: `${count > 1 ? 'they were' : 'it was'} not saved: run with --save <dir> to keep such deliveries for \`webhook replay\`` };
  }
  // The journal names them all: one command sends every delivery whose forward failed, and only those.
  const command = `svc-migrate webhook replay --failed ${shellWord(saveDir)} --url ${wholeTarget ? shellWord(target) : '<your app\'s URL>'}`;
  return { message, hint: `\`${command}\` sends ${count > 1 ? 'them' : 'it'} again (${saveDir}/${JOURNAL_NAME} records which failed)` };
}
