import type { Command } from 'commander';
import type { Context, Runner } from '../../context.js';
import { CliError, ExitCode, InterruptedError, UnavailableError, UsageError } from '../../errors.js';
import { inertText } from '../../support/outside-text.js';
import { type ReplayOutcome, replaySaved } from '../../webhook/replay.js';
import { targetUrl } from '../../webhook/target-url.js';
import { checkedSecret, examples } from '../common/options.js';

interface ReplayFlags {
  url: string;
  resign?: boolean;
  secret?: string;
}

interface ReplayOptions {
  /** A saved .http file, or a directory of them. */
  path: string;
  url: string;
  /** With --resign: the secret to sign them with again. */
  secret?: string;
}

function parseReplayOptions(path: string, flags: ReplayFlags): ReplayOptions {
  if (flags.resign && flags.secret === undefined) throw new UsageError('--resign needs --secret, the secret to sign with');
  if (!flags.resign && flags.secret !== undefined) {
    throw new UsageError('--secret is used only with --resign', { hint: 'add --resign to sign the deliveries again with it; without, they are sent as saved' });
  }
  const url = targetUrl(flags.url, '--url');
  const secret = flags.resign ? checkedSecret(flags.secret as string, '--secret', 'pass the secret the receiver verifies with') : undefined;
  return { path, url, ...(secret === undefined ? {} : { secret }) };
}

/** Re-sends saved deliveries (webhook/replay.ts); the exit code says whether any was not sent, refused or skipped. */
async function replay(context: Context, { path, url, secret }: ReplayOptions): Promise<ReplayOutcome[]> {
  const { outcomes, total, interrupted, inFlight } = await replaySaved(path, url, context.signal, secret);
  if (total === 0) throw new UsageError(`no saved deliveries (*.http) in ${path}`);
  context.out.result(outcomes, (list) =>
    list
      .map((o) => inertText(`${o.file}: ${o.skipped ? `skipped (${o.error})` : o.status === null ? `failed (${o.error})` : `${o.status} in ${o.ms} ms`}`))
      .join('\n'),
  );
  // What was sent is shown above: a rerun would send those again.
  if (interrupted) {
    const sent = `${outcomes.filter((o) => o.status !== null).length} of ${total} files were sent`;
    throw new InterruptedError(`interrupted: ${sent}${inFlight ? `, and ${inertText(inFlight)} was being sent (its receiver may have it)` : ''}`);
  }
  const unsent = outcomes.filter((o) => o.status === null && !o.skipped);
  const refused = outcomes.filter((o) => o.status !== null && (o.status < 200 || o.status >= 300));
  const skipped = outcomes.filter((o) => o.skipped);
  const of = `of ${outcomes.length}`;
  if (unsent.length > 0) throw new UnavailableError(`${unsent.length} ${of} deliveries could not be sent`);
  if (refused.length > 0) throw new CliError(`${refused.length} ${of} deliveries were refused`, ExitCode.Unexpected);
  if (skipped.length > 0) {
    throw new UsageError(`${skipped.length} ${of} files were skipped: not saved deliveries`, {
      hint: 'replay reads regular *.http files written by `webhook listen --save`',
    });
  }
  return outcomes;
}

export function register(webhook: Command, run: Runner): void {
  webhook
    .command('replay')
    .description('re-send deliveries saved by `listen --save`, byte for byte, in their original order')
    .argument('<file-or-dir>', 'a saved .http file, or a directory of them')
    .requiredOption('--url <url>', 'where to post them: a URL, host:port[/path], port[/path] or /path (this machine)')
    .option('--resign', 'sign them again with --secret (for a receiver whose secret changed)')
    .option('--secret <secret>', 'the secret to sign with, with --resign')
    .addHelpText(
      'after',
      examples([
        'svc-migrate webhook replay deliveries/ --url http://127.0.0.1:3000/webhooks',
        'svc-migrate webhook replay deliveries/8f2c.http --url http://127.0.0.1:8787/ --resign --secret new',
      ]),
    )
    .action((path: string, flags: ReplayFlags, command: Command) =>
      run(
        command,
        () => parseReplayOptions(path, flags),
        async (context, options) => {
          await replay(context, options);
        },
      ),
    );
}
