import type { Command } from 'commander';
import type { Context, Runner } from '../../context.js';
import { CliError, ExitCode, InterruptedError, UnavailableError, UsageError } from '../../errors.js';
import { basename } from 'node:path';
import { redactUrl } from '../../api/redact.js';
import { DELIVERY_HEADERS } from '../../api/types.js';
import { inertText } from '../../support/outside-text.js';
import { shellWord } from '../../support/shell-word.js';
import { JOURNAL_NAME, JournalError, openJournal } from '../../webhook/forward-journal.js';
import { type ReplayOutcome, replaySaved } from '../../webhook/replay.js';
import { lockFailedReplay } from '../../webhook/replay-lock.js';
import { parseIds, selectSaved } from '../../webhook/replay-select.js';
import type { PostResult } from '../../webhook/sender.js';
import type { SavedDelivery, SavedEntry } from '../../webhook/store.js';
import { targetUrl } from '../../webhook/target-url.js';
import { INPUT_LIMITS, readInputFile, readStdin } from '../common/input.js';
import { checkedSecret, checkNotEmpty, examples } from '../common/options.js';

interface ReplayFlags {
  url: string;
  resign?: boolean;
  secret?: string;
  failed?: string;
  ids?: string;
}

interface ReplayOptions {
  /** Saved .http files, and directories of them. */
  paths: string[];
  /** --failed DIR: what DIR's forward journal says last failed. */
  failed?: string;
  /** --ids FILE: only the deliveries it names. */
  idsFile?: string;
  url: string;
  /** With --resign: the secret to sign them with again. */
  secret?: string;
}

function parseReplayOptions(paths: string[], flags: ReplayFlags): ReplayOptions {
  if (flags.resign && flags.secret === undefined) throw new UsageError('--resign needs --secret, the secret to sign with');
  if (!flags.resign && flags.secret !== undefined) {
    throw new UsageError('--secret is used only with --resign', { hint: 'add --resign to sign the deliveries again with it; without, they are sent as saved' });
  }
  checkNotEmpty(flags.failed, '--failed', 'name the directory `webhook listen --save` saved to');
  checkNotEmpty(flags.ids, '--ids', 'name a file of delivery ids, one a line');
  for (const path of paths) checkNotEmpty(path, 'a FILE-OR-DIR argument', 'name a saved .http file or a directory of them');
  if (paths.length === 0 && flags.failed === undefined) {
    throw new UsageError('name the deliveries to send: saved .http files or directories, or --failed DIR', {
      hint: '`webhook replay --failed DIR --url …` sends those whose forward failed during `webhook listen --save DIR`',
    });
  }
  if (paths.length > 0 && flags.failed !== undefined) {
    throw new UsageError('--failed DIR takes the place of FILE-OR-DIR arguments', { hint: 'name either --failed DIR (with --ids FILE to narrow it) or the files and directories' });
  }
  const url = targetUrl(flags.url, '--url');
  const secret = flags.resign ? checkedSecret(flags.secret as string, '--secret', 'pass the secret the receiver verifies with') : undefined;
  return {
    paths,
    url,
    ...(flags.failed === undefined ? {} : { failed: flags.failed }),
    ...(flags.ids === undefined ? {} : { idsFile: flags.ids }),
    ...(secret === undefined ? {} : { secret }),
  };
}

/** `--ids FILE`'s bytes: a regular file or a pipe (`-` and /dev/stdin are stdin, `<(jq …)` a pipe), within its bound. */
async function readIdsInput(context: Context, path: string): Promise<Buffer> {
  const hint = { hint: 'one delivery id a line (X-Service-Delivery); # starts a comment' };
  if (path === '-' || path === '/dev/stdin') {
    if (context.io.stdin.isTTY) throw new UsageError(`--ids ${path}: stdin is a terminal`, { hint: 'pipe the ids in: … | svc-migrate webhook replay --ids - …' });
    return readStdin(context, INPUT_LIMITS.idsFile, 'a list of delivery ids');
  }
  return readInputFile(path, INPUT_LIMITS.idsFile, '--ids', context.signal, '', () => new UsageError(`--ids ${path}: not a regular file or a pipe`, hint));
}

/** Re-sends saved deliveries (webhook/replay.ts); the exit code says whether any was not sent, refused or skipped. */
async function replay(context: Context, options: ReplayOptions): Promise<ReplayOutcome[]> {
  const { failed } = options;
  // One --failed run per directory: a second would send the same deliveries again.
  const release = failed === undefined ? undefined : await lockFailedReplay(failed, (notice) => context.out.warn(inertText(notice)));
  try {
    return await replayLocked(context, options);
  } finally {
    await release?.();
  }
}

async function replayLocked(context: Context, { paths, failed, idsFile, url, secret }: ReplayOptions): Promise<ReplayOutcome[]> {
  const { out } = context;
  const ids = idsFile === undefined ? undefined : parseIds(await readIdsInput(context, idsFile), idsFile);
  const selected = await selectSaved({ paths, failedDir: failed, ids });
  for (const notice of selected.notices) out.warn(inertText(notice));
  if (selected.entries.length + selected.unreadable.length === 0) {
    // Nothing failed, or all of it was sent since: a second --failed has nothing left to do.
    if (failed !== undefined && ids === undefined) {
      out.result([], () => `no delivery in ${inertText(failed)} waits to be sent again: ${selected.nothingLeft}`);
      return [];
    }
    throw new UsageError(`no saved deliveries (*.http)${ids === undefined ? '' : ' of those ids'} in ${inertText((failed === undefined ? paths : [failed]).join(', '))}`);
  }
  // --failed: each replay's outcome is recorded as a forward's, so the next --failed sends only what still failed.
  const journal =
    failed === undefined
      ? undefined
      : await openJournal(failed, (error) => out.warn(inertText(error.message))).catch((error: unknown) => {
          throw error instanceof JournalError ? new UsageError(inertText(error.message), { hint: `move ${inertText(failed)}/${JOURNAL_NAME} aside: \`webhook listen\` writes a regular file of yours there` }) : error;
        });
  const target = redactUrl(url);
  const sent = (entry: SavedEntry, delivery: SavedDelivery, result: PostResult | undefined) => {
    const delivered = result !== undefined && result.status >= 200 && result.status < 300;
    journal?.append({
      file: basename(entry.name),
      delivery: fieldOf(delivery.rawHeaders, DELIVERY_HEADERS.delivery) ?? '',
      outcome: delivered ? 'delivered' : 'failed',
      status: result?.status ?? null,
      at: new Date(context.clock.now()).toISOString(),
      target,
    });
  };
  // Each file's line as it is sent: a long --failed run shows its progress (--json: one list at the end).
  const done = (outcome: ReplayOutcome) => out.item(outcome, outcomeLine);
  let run;
  try {
    run = await replaySaved(selected, url, context.signal, { resignWith: secret, sent, done });
  } finally {
    await journal?.close();
  }
  const { outcomes, total, interrupted, inFlight } = run;
  out.result(outcomes, () => '');
  // What was sent is shown above: a rerun would send those again.
  if (interrupted) {
    const sentCount = `${outcomes.filter((o) => o.status !== null).length} of ${total} files were sent`;
    throw new InterruptedError(`interrupted: ${sentCount}${inFlight ? `, and ${inertText(inFlight)} was being sent (its receiver may have it)` : ''}`);
  }
  const unsent = outcomes.filter((o) => o.status === null && !o.skipped);
  const refused = outcomes.filter((o) => o.status !== null && (o.status < 200 || o.status >= 300));
  const skipped = outcomes.filter((o) => o.skipped);
  const of = `of ${outcomes.length}`;
  if (unsent.length > 0) {
    const again = failed === undefined ? 'run the same command again' : `\`svc-migrate webhook replay --failed ${inertText(shellWord(failed))} --url ${inertText(shellWord(target))}\` sends them again (${JOURNAL_NAME} records they failed)`;
    throw new UnavailableError(`${unsent.length} ${of} deliveries could not be sent`, {
      hint: `is the receiver at ${inertText(target)} running? The deliveries stay saved: once it answers, ${again}`,
    });
  }
  if (refused.length > 0) throw new CliError(`${refused.length} ${of} deliveries were refused`, ExitCode.Unexpected);
  if (skipped.length > 0) {
    throw new UsageError(`${skipped.length} ${of} files were skipped: not saved deliveries`, {
      hint: 'replay reads regular *.http files written by `webhook listen --save`',
    });
  }
  return outcomes;
}

/** A file's outcome as a line. */
const outcomeLine = (o: ReplayOutcome) =>
  inertText(`${o.file}: ${o.skipped ? `skipped (${o.error})` : o.status === null ? `failed (${o.error})` : `${o.status} in ${o.ms} ms`}`);

/** The first value of a header field, by its name in lower case. */
function fieldOf(rawHeaders: string[], name: string): string | undefined {
  for (let i = 0; i < rawHeaders.length; i += 2) if ((rawHeaders[i] as string).toLowerCase() === name) return rawHeaders[i + 1];
  return undefined;
}

export function register(webhook: Command, run: Runner): void {
  webhook
    .command('replay')
    .description('re-send deliveries saved by `listen --save`, byte for byte, in their original order')
    .argument('[file-or-dir...]', 'saved .http files, or directories of them')
    .requiredOption('--url <url>', 'where to post them: a URL, host:port[/path], port[/path] or /path (this machine)')
    .option('--failed <dir>', 'instead: the deliveries saved in dir whose forward last failed or was never recorded (its forwards.jsonl), recording each outcome there')
    .option('--ids <file>', 'only the deliveries of these ids (one a line, # for comments; - reads stdin) among those named')
    .option('--resign', 'sign them again with --secret (for a receiver whose secret changed)')
    .option('--secret <secret>', 'the secret to sign with, with --resign')
    .addHelpText(
      'after',
      examples([
        'svc-migrate webhook replay deliveries/ --url http://127.0.0.1:3000/webhooks',
        'svc-migrate webhook replay --failed deliveries/ --url 3000/webhooks',
        'svc-migrate webhook replay deliveries/ --ids redeliver.txt --url 3000/webhooks',
        'svc-migrate webhook replay deliveries/8f2c.http --url http://127.0.0.1:8787/ --resign --secret new',
      ]),
    )
    .action((paths: string[], flags: ReplayFlags, command: Command) =>
      run(
        command,
        () => parseReplayOptions(paths, flags),
        async (context, options) => {
          await replay(context, options);
        },
      ),
    );
}
