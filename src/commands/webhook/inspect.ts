import type { Command } from 'commander';
import type { Context, Invocation, Runner } from '../../context.js';
import { UsageError } from '../../errors.js';
import { redactUrl } from '../../api/redact.js';
import { readingReason } from '../../support/system-errors.js';
import { inertText } from '../../support/outside-text.js';
import { type JournalWriter, openJournal, readJournal } from '../../webhook/forward-journal.js';
import { lockFailedReplay } from '../../webhook/replay-lock.js';
import { DEFAULT_KEEP } from '../../webhook/inspector/log.js';
import type { FailedReplayGuard, PageForward } from '../../webhook/inspector/replay.js';
import { targetUrl } from '../../webhook/target-url.js';
import { checkedSecret, envSecret, examples, parsePort, parsePositiveInt, parseSeconds } from '../common/options.js';
import { SERVICE_TIMEOUT_MS } from '../../webhook/forwarder.js';

interface InspectFlags {
  port?: number;
  secret?: string[];
  forwardTo?: string;
  forwardTimeout?: number;
  keep: number;
}

interface InspectOptions {
  /** A directory written by `webhook listen --save`. */
  dir: string;
  port: number;
  /** Each --secret checked, then SVC_WEBHOOK_SECRET's. */
  secrets: string[];
  forward?: { target: string; timeoutMs: number };
  keep: number;
}

interface InspectStart {
  url: string;
  directory: string;
  /** Saved deliveries found, and how many of them (the newest) the page lists. */
  deliveries: number;
  listed: number;
  unreadable: { name: string; reason: string }[];
}

/** Files that are not saved deliveries named on stderr, one warning each; the rest are counted. */
const UNREADABLE_NAMED = 20;

const SECRET_HINT = 'pass the secret the deliveries were signed with, or leave --secret out to show them unverified';

function parseInspectOptions(dir: string, flags: InspectFlags, { settings }: Invocation): InspectOptions {
  const secrets = (flags.secret ?? []).map((secret) => checkedSecret(secret, '--secret', SECRET_HINT));
  const fromEnv = envSecret(settings.webhookSecret);
  if (fromEnv !== undefined && !secrets.includes(fromEnv)) secrets.push(fromEnv);
  const target = flags.forwardTo === undefined ? undefined : targetUrl(flags.forwardTo, '--forward-to');
  return {
    dir,
    port: flags.port ?? 0,
    secrets,
    ...(target === undefined ? {} : { forward: { target, timeoutMs: (flags.forwardTimeout ?? SERVICE_TIMEOUT_MS / 1000) * 1000 } }),
    keep: flags.keep,
  };
}

/** The inspector's page over a `--save` directory, until Ctrl-C: read-only but for replay. */
async function inspect(context: Context, { dir, secrets, keep, ...options }: InspectOptions): Promise<void> {
  const { out } = context;
  // Loaded when used: no other command pays for the page's server.
  const { readSavedLog } = await import('../../webhook/inspector/saved.js');
  const { openInspector } = await import('../common/inspector.js');
  const saved = await readSavedLog(dir, keep, secrets).catch((error: unknown) => {
    throw new UsageError(`cannot read deliveries from ${inertText(dir)}: ${readingReason(error)}`, { hint: 'name a directory written by `webhook listen --save`' });
  });
  const { log, unreadable, total, journalNotice } = saved;
  if (total === 0 && unreadable.length === 0) throw new UsageError(`no saved deliveries (*.http) in ${inertText(dir)}`, { hint: 'name a directory written by `webhook listen --save`' });
  const forward = options.forward === undefined ? undefined : { ...options.forward, headers: [] };
  const shownTarget = forward === undefined ? undefined : redactUrl(forward.target);
  // Deferred before the page: it closes first, so a replay it ends is journaled.
  const journal = pageJournal(context, dir, shownTarget ?? '');
  const inspector = await openInspector(
    log,
    { mode: 'saved', where: dir, forwardTarget: shownTarget, secrets: secrets.length, unreadable },
    { forward, secrets, forwarded: journal, guardFailedReplay: () => guardFailedReplay(context, dir) },
    options.port,
    '--port',
  );
  context.defer(() => inspector.close());
  if (journalNotice !== undefined) out.warn(inertText(journalNotice));
  for (const { name, reason } of unreadable.slice(0, UNREADABLE_NAMED)) {
    // Most reasons say it already ("not a saved delivery (no svc-migrate header)"); a link or a FIFO's do not.
    out.warn(`${inertText(name)}: ${inertText(reason.startsWith('not a saved delivery') ? reason : `not a saved delivery (${reason})`)}`);
  }
  if (unreadable.length > UNREADABLE_NAMED) {
    out.warn(`${unreadable.length - UNREADABLE_NAMED} more files are not saved deliveries (the --json start line names them all)`);
  }
  const start: InspectStart = { url: inspector.url, directory: dir, deliveries: total, listed: log.list().length, unreadable };
  out.line(start, (info) => {
    const older = info.listed < info.deliveries ? ` (the newest ${info.listed})` : '';
    return `${info.deliveries} saved deliver${info.deliveries === 1 ? 'y' : 'ies'}${older} in ${inertText(info.directory)}: ${info.url}`;
  });
  await new Promise<void>((resolve) => {
    if (context.signal.aborted) return resolve();
    context.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  out.info('inspector stopped');
}

/**
 * The page's replays to the forward target, appended to `<dir>/forwards.jsonl` as `webhook replay
 * --failed`'s are (so `--failed` then sends only what still failed); the journal is opened at the
 * first of them: the page alone writes nothing.
 */
function pageJournal(context: Context, dir: string, target: string): (forward: PageForward) => void {
  let opened: Promise<JournalWriter | undefined> | undefined;
  const unrecorded = (error: Error) => {
    context.out.warn(`${inertText(error.message)}: the page's replays are not recorded in it`);
    return undefined;
  };
  context.defer(async () => {
    await (await opened)?.close();
  });
  return ({ record, delivered, status, at }) => {
    if (record.file === undefined) return;
    opened ??= openJournal(dir, unrecorded).catch(unrecorded);
    const entry = { file: record.file, delivery: record.id ?? '', outcome: delivered ? ('delivered' as const) : ('failed' as const), status, at, target };
    void opened.then((journal) => journal?.append(entry));
  };
}

/** "Replay failed" over DIR: `replay --failed`'s lock held, and the journal read again (one may have delivered some since). */
async function guardFailedReplay(context: Context, dir: string): Promise<FailedReplayGuard> {
  const release = await lockFailedReplay(dir, (notice) => context.out.warn(inertText(notice)));
  const journal = await readJournal(dir).catch(() => undefined);
  return {
    stillFailed: (record) => record.file === undefined || journal?.last.get(record.file)?.outcome !== 'delivered',
    release,
  };
}

export function register(webhook: Command, run: Runner): void {
  webhook
    .command('inspect')
    .description('serve the deliveries saved by `listen --save` as a page on 127.0.0.1: read them, replay them')
    .argument('<dir>', 'a directory written by `webhook listen --save`')
    .option('--port <n>', 'port on 127.0.0.1 (default: a free one)', parsePort)
    .option('--secret <secret>', 'verify with it, and offer it for re-signing replays; repeat for several (env SVC_WEBHOOK_SECRET)', (value: string, previous: string[] = []) => [...previous, value])
    .option('--forward-to <url>', 'where "replay to the forward target" sends (a port or path means localhost)')
    .option('--forward-timeout <seconds>', `time limit of each replay to it (default ${SERVICE_TIMEOUT_MS / 1000}, as listen's forwards)`, parseSeconds)
    .option('--keep <n>', 'the newest deliveries listed', parsePositiveInt, DEFAULT_KEEP)
    .addHelpText(
      'after',
      examples([
        'svc-migrate webhook inspect deliveries/',
        'svc-migrate webhook inspect deliveries/ --secret "$SECRET" --forward-to 3000/webhooks',
      ]),
    )
    .action((dir: string, flags: InspectFlags, command: Command) =>
      run(
        command,
        (invocation) => parseInspectOptions(dir, flags, invocation),
        async (context, options) => {
          await inspect(context, options);
        },
      ),
    );
}
