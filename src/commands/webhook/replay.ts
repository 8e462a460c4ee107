import type { Command } from 'commander';
import type { Context, Runner } from '../../context.js';
import { CliError, ExitCode, UnavailableError, UsageError } from '../../errors.js';
import { signatureHeaders } from '../../webhook/signature.js';
import { loadDeliveries } from '../../webhook/store.js';

interface ReplayOptions {
  url: string;
  resign?: boolean;
  secret?: string;
}

interface ReplayOutcome {
  file: string;
  status: number | null;
  ms: number | null;
  error?: string;
}

/** Re-sends saved deliveries byte for byte, in their original order; `--resign` signs them anew. */
async function replay(context: Context, path: string, options: ReplayOptions): Promise<ReplayOutcome[]> {
  if (options.resign && !options.secret) throw new UsageError('--resign needs --secret, the secret to sign with');
  let saved;
  try {
    saved = await loadDeliveries(path);
  } catch (error) {
    throw new UsageError(`cannot read deliveries from ${path}: ${(error as Error).message}`);
  }
  if (saved.length === 0) throw new UsageError(`no saved deliveries (*.http) in ${path}`);
  const { postDelivery, sendableHeaders } = await import('../../webhook/sender.js');
  const outcomes: ReplayOutcome[] = [];
  for (const delivery of saved) {
    let headers = sendableHeaders(delivery.rawHeaders);
    if (options.resign && options.secret) {
      headers = Object.fromEntries(Object.entries(headers).filter(([name]) => !/^x-hub-signature(-256)?$/i.test(name)));
      Object.assign(headers, signatureHeaders(delivery.body, options.secret));
    }
    try {
      const result = await postDelivery(options.url, headers, delivery.body, 30_000);
      outcomes.push({ file: delivery.file, status: result.status, ms: result.ms });
    } catch (error) {
      outcomes.push({ file: delivery.file, status: null, ms: null, error: (error as Error).message });
    }
  }
  context.out.result(outcomes, (list) =>
    list.map((o) => `${o.file}: ${o.status === null ? `failed (${o.error})` : `${o.status} in ${o.ms} ms`}`).join('\n'),
  );
  const failed = outcomes.filter((o) => o.status === null || o.status < 200 || o.status >= 300);
  if (failed.some((o) => o.status === null)) throw new UnavailableError(`${failed.length} of ${outcomes.length} deliveries could not be sent`);
  if (failed.length > 0) throw new CliError(`${failed.length} of ${outcomes.length} deliveries were refused`, ExitCode.Unexpected);
  return outcomes;
}

export function register(webhook: Command, run: Runner): void {
  webhook
    .command('replay')
    .description('re-send deliveries saved by `listen --save`, byte for byte, in their original order')
    .argument('<file-or-dir>', 'a saved .http file, or a directory of them')
    .requiredOption('--url <url>', 'where to post them')
    .option('--resign', 'sign them again with --secret (for a receiver whose secret changed)')
    .option('--secret <secret>', 'the secret to sign with, with --resign')
    .addHelpText(
      'after',
      `
Examples:
  svc-migrate webhook replay deliveries/ --url http://127.0.0.1:3000/webhooks
  svc-migrate webhook replay deliveries/8f2c.http --url http://127.0.0.1:8787/ --resign --secret new`,
    )
    .action((path: string, options: ReplayOptions, command: Command) =>
      run(command, async (context) => {
        await replay(context, path, options);
      }),
    );
}
