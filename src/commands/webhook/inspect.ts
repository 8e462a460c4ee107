import type { Command } from 'commander';
import type { Context, Runner } from '../../context.js';
import { UsageError } from '../../errors.js';
import { redactUrl } from '../../api/redact.js';
import { readingReason } from '../../support/system-errors.js';
import { inertText } from '../../support/outside-text.js';
import { DEFAULT_KEEP } from '../../webhook/inspector/log.js';
import { targetUrl } from '../../webhook/target-url.js';
import { checkedSecret, envSecret, examples, parsePort, parsePositiveInt, parseSeconds } from '../common/options.js';

interface InspectOptions {
  port?: number;
  secret?: string[];
  forwardTo?: string;
  forwardTimeout?: number;
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

/** The inspector's page over a `--save` directory, until Ctrl-C: read-only but for replay. */
async function inspect(context: Context, dir: string, options: InspectOptions): Promise<void> {
  const { out } = context;
  const secrets = (options.secret ?? []).map((secret) => checkedSecret(secret, '--secret', SECRET_HINT));
  const fromEnv = envSecret(context.settings.webhookSecret);
  if (fromEnv !== undefined && !secrets.includes(fromEnv)) secrets.push(fromEnv);
  const target = options.forwardTo === undefined ? undefined : targetUrl(options.forwardTo, '--forward-to');
  // Loaded when used: no other command pays for the page's server.
  const { readSavedLog } = await import('../../webhook/inspector/saved.js');
  const { openInspector } = await import('../common/inspector.js');
  const saved = await readSavedLog(dir, options.keep, secrets).catch((error: unknown) => {
    throw new UsageError(`cannot read deliveries from ${inertText(dir)}: ${readingReason(error)}`, { hint: 'name a directory written by `webhook listen --save`' });
  });
  const { log, unreadable, total } = saved;
  if (total === 0 && unreadable.length === 0) throw new UsageError(`no saved deliveries (*.http) in ${inertText(dir)}`, { hint: 'name a directory written by `webhook listen --save`' });
  const forward = target === undefined ? undefined : { target, timeoutMs: (options.forwardTimeout ?? 30) * 1000, headers: [] };
  const shownTarget = target === undefined ? undefined : redactUrl(target);
  const inspector = await openInspector(
    log,
    { mode: 'saved', where: dir, forwardTarget: shownTarget, secrets: secrets.length, unreadable },
    { forward, secrets },
    options.port ?? 0,
    '--port',
  );
  context.defer(() => inspector.close());
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

export function register(webhook: Command, run: Runner): void {
  webhook
    .command('inspect')
    .description('serve the deliveries saved by `listen --save` as a page on 127.0.0.1: read them, replay them')
    .argument('<dir>', 'a directory written by `webhook listen --save`')
    .option('--port <n>', 'port on 127.0.0.1 (default: a free one)', parsePort)
    .option('--secret <secret>', 'verify with it, and offer it for re-signing replays; repeat for several (env SVC_WEBHOOK_SECRET)', (value: string, previous: string[] = []) => [...previous, value])
    .option('--forward-to <url>', 'where "replay to the forward target" sends (a port or path means localhost)')
    .option('--forward-timeout <seconds>', 'time limit of each replay to it (default 30)', parseSeconds)
    .option('--keep <n>', 'the newest deliveries listed', parsePositiveInt, DEFAULT_KEEP)
    .addHelpText(
      'after',
      examples([
        'svc-migrate webhook inspect deliveries/',
        'svc-migrate webhook inspect deliveries/ --secret "$SECRET" --forward-to 3000/webhooks',
      ]),
    )
    .action((dir: string, options: InspectOptions, command: Command) =>
      run(command, async (context) => {
        await inspect(context, dir, options);
      }),
    );
}
