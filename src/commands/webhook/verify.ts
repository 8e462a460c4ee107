import type { Command } from 'commander';
import type { Context, Invocation, Runner } from '../../context.js';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { MAX_FORM_BODY_BYTES } from '../../webhook/delivery.js';
import { verifySignature } from '../../webhook/signature.js';
import { readStdin } from '../common/input.js';
import { checkedSecret, envSecret, examples } from '../common/options.js';

interface VerifyFlags {
  secret?: string[];
  signature: string;
}

interface VerifyOptions {
  /** Each --secret, then SVC_WEBHOOK_SECRET's if it is another: numbered from 1 in this order. */
  secrets: string[];
  signature: string;
}

function parseVerifyOptions(flags: VerifyFlags, { settings }: Invocation): VerifyOptions {
  const secrets = (flags.secret ?? []).map((secret) => checkedSecret(secret, '--secret', 'pass the webhook\'s secret'));
  const fromEnv = envSecret(settings.webhookSecret);
  if (fromEnv !== undefined && !secrets.includes(fromEnv)) secrets.push(fromEnv);
  if (secrets.length === 0) throw new UsageError('--secret is required (or SVC_WEBHOOK_SECRET)');
  return { secrets, signature: flags.signature };
}

/** Offline check of a signature header value against a body on stdin, with each secret given: exit 0 if one matches, 1 if none. */
async function verify(context: Context, { secrets, signature }: VerifyOptions): Promise<boolean> {
  if (context.io.stdin.isTTY) {
    context.out.info('reading the body from stdin: paste it, then press Ctrl-D (or run it as `… < body.json`)');
  }
  const body = await readStdin(context, MAX_FORM_BODY_BYTES, 'a delivery');
  const value = signature.trim();
  const headers = value.startsWith('sha1=') ? { signature: value } : { signature256: value };
  const result = verifySignature(body, headers, secrets);
  // Numbered as given, from 1: which of the secrets of a rotation the sender still uses.
  const report = result.valid
    ? { valid: true, algorithm: result.algorithm, secret: result.secretIndex + 1 }
    : { valid: false, reason: result.reason };
  const which = result.valid && secrets.length > 1 ? ` (secret #${result.secretIndex + 1})` : '';
  const checked = secrets.length > 1 ? ` (checked with ${secrets.length} secrets)` : '';
  context.out.result(report, () => (result.valid ? `valid ${result.algorithm} signature${which}` : `invalid${checked}: ${result.reason}`));
  if (!result.valid) throw new CliError('the signature does not match', ExitCode.Unexpected);
  return true;
}

export function register(webhook: Command, run: Runner): void {
  webhook
    .command('verify')
    .description('check a signature header value against a body read from stdin (exit 0 valid, 1 invalid)')
    .requiredOption('--signature <value>', 'the X-Hub-Signature-256 (sha256=…) or X-Hub-Signature (sha1=…) value')
    .option('--secret <secret>', 'the webhook secret; repeat for a rotation: valid if any matches (env SVC_WEBHOOK_SECRET)', (value: string, previous: string[] = []) => [...previous, value])
    .addHelpText(
      'after',
      examples([
        'svc-migrate webhook verify --secret "$SECRET" --signature "sha256=…" < body.json',
        'svc-migrate webhook verify --secret "$OLD" --secret "$NEW" --signature "sha256=…" < body.json',
      ]),
    )
    .action((flags: VerifyFlags, command: Command) =>
      run(
        command,
        (invocation) => parseVerifyOptions(flags, invocation),
        async (context, options) => {
          await verify(context, options);
        },
      ),
    );
}
