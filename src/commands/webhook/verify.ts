import type { Command } from 'commander';
import type { Context, Invocation, Runner } from '../../context.js';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { MAX_FORM_BODY_BYTES } from '../../webhook/delivery.js';
import { verifySignature } from '../../webhook/signature.js';
import { readStdin } from '../common/input.js';
import { examples, givenSecret } from '../common/options.js';

interface VerifyFlags {
  secret?: string;
  signature: string;
}

interface VerifyOptions {
  /** --secret, else SVC_WEBHOOK_SECRET. */
  secret: string;
  signature: string;
}

function parseVerifyOptions(flags: VerifyFlags, { settings }: Invocation): VerifyOptions {
  const secret = givenSecret(flags.secret, settings.webhookSecret, 'pass the webhook\'s secret');
  if (secret === undefined) throw new UsageError('--secret is required (or SVC_WEBHOOK_SECRET)');
  return { secret, signature: flags.signature };
}

/** Offline check of a signature header value against a body on stdin: exit 0 valid, 1 invalid. */
async function verify(context: Context, { secret, signature }: VerifyOptions): Promise<boolean> {
  if (context.io.stdin.isTTY) {
    context.out.info('reading the body from stdin: paste it, then press Ctrl-D (or run it as `… < body.json`)');
  }
  const body = await readStdin(context, MAX_FORM_BODY_BYTES, 'a delivery');
  const value = signature.trim();
  const headers = value.startsWith('sha1=') ? { signature: value } : { signature256: value };
  const result = verifySignature(body, headers, [secret]);
  const report = result.valid ? { valid: true, algorithm: result.algorithm } : { valid: false, reason: result.reason };
  context.out.result(report, () => (result.valid ? `valid ${result.algorithm} signature` : `invalid: ${result.reason}`));
  if (!result.valid) throw new CliError('the signature does not match', ExitCode.Unexpected);
  return true;
}

export function register(webhook: Command, run: Runner): void {
  webhook
    .command('verify')
    .description('check a signature header value against a body read from stdin (exit 0 valid, 1 invalid)')
    .requiredOption('--signature <value>', 'the X-Hub-Signature-256 (sha256=…) or X-Hub-Signature (sha1=…) value')
    .option('--secret <secret>', 'the webhook secret (env SVC_WEBHOOK_SECRET)')
    .addHelpText('after', examples(['svc-migrate webhook verify --secret "$SECRET" --signature "sha256=…" < body.json']))
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
