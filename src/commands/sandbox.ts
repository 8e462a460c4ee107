import type { Command } from 'commander';
import type { Context, Runner } from '../context.js';
import { fromSystemError, isSystemError } from '../support/system-errors.js';
import type { SandboxOptions } from '../sandbox/server.js';
import { sandboxBanner } from '../ui/sandbox.js';
import { INPUT_LIMITS, readInputFile } from './common/input.js';
import { checkNotEmpty, examples, parseNonNegativeInt, parseNonNegativeNumber, parsePort, parsePositiveInt, parseSeconds } from './common/options.js';

interface SandboxCommandOptions {
  tls?: boolean;
  port?: number;
  storagePort?: number;
  seed?: string;
  exportSeconds?: number;
  exportSecondsPerRepo?: number;
  repositories?: number;
  issues?: number;
  pullRequests?: number;
  archiveSize?: number;
  rateLimit?: number;
  relayPing?: number;
}

/** Runs the emulator in the foreground until Ctrl-C. */
async function sandbox(context: Context, options: SandboxCommandOptions): Promise<void> {
  const { startSandbox } = await import('../sandbox/server.js');
  const { describeToken, parseSeed } = await import('../sandbox/seed.js');
  const sandboxOptions: SandboxOptions = {
    port: options.port ?? 0,
    storagePort: options.storagePort ?? 0,
    exportSeconds: options.exportSeconds ?? 10,
    exportSecondsPerRepository: options.exportSecondsPerRepo ?? 0.1,
    repositories: options.repositories ?? 0,
    ...(options.issues === undefined ? {} : { issues: options.issues }),
    ...(options.pullRequests === undefined ? {} : { pullRequests: options.pullRequests }),
    archivePadBytes: options.archiveSize ?? 0,
    tls: Boolean(options.tls),
    ...(options.relayPing === undefined ? {} : { relayPingMs: options.relayPing * 1000 }),
  };
  if (options.rateLimit) sandboxOptions.rateLimit = { limit: options.rateLimit, windowSeconds: 3600 };
  if (options.seed) sandboxOptions.seed = parseSeed((await readInputFile(options.seed, INPUT_LIMITS.seed, '--seed', context.signal)).toString('utf8'), options.seed);
  let running: Awaited<ReturnType<typeof startSandbox>>;
  try {
    running = await startSandbox(sandboxOptions);
  } catch (error) {
    const flag = isSystemError(error) && error.port !== undefined && error.port === options.storagePort ? '--storage-port' : '--port';
    throw fromSystemError(error, { flag });
  }
  context.defer(() => running.close());
  context.out.line(
    {
      base_url: running.baseUrl,
      storage_origin: running.storageOrigin,
      ...(running.ca ? { ca_file: running.ca.file } : {}),
      org: running.org,
      token: running.ownerToken,
      tokens: running.tokens.map(describeToken),
    },
    (info) => sandboxBanner(info, context.out.theme),
  );
  await new Promise<void>((resolve) => {
    if (context.signal.aborted) return resolve();
    context.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  context.out.info('sandbox stopped');
}

export function register(program: Command, run: Runner): void {
  program
    .command('sandbox')
    .description('run a local emulator of the service (migrations, archive storage) until Ctrl-C')
    .option('--tls', 'serve both origins over HTTPS, with a certificate from a CA made at start (its file is printed)')
    .option('--port <n>', 'API port on 127.0.0.1 (default: any free port)', parsePort)
    .option('--storage-port <n>', 'archive storage port on localhost (default: any free port)', parsePort)
    .option('--seed <file>', 'organizations, repositories, users and tokens as JSON (docs/sandbox.md)')
    .option('--export-seconds <s>', 'seconds from start to exported (default 10)', parseNonNegativeNumber)
    .option(
      '--export-seconds-per-repo <s>',
      'seconds added to an export per repository it holds (default 0.1)',
      parseNonNegativeNumber,
    )
    .option('--repositories <n>', 'add repositories repo-0001 … repo-N to the organization', parseNonNegativeInt)
    .option('--issues <n>', 'issues in the metadata of every repository (default 3)', parseNonNegativeInt)
    .option('--pull-requests <n>', 'pull requests in the metadata of every repository (default 3)', parseNonNegativeInt)
    .option('--archive-size <bytes>', 'pad every archive with this many bytes (performance tests)', parseNonNegativeInt)
    .option('--rate-limit <n>', 'answer 429 after n requests per token and hour', parsePositiveInt)
    .option('--relay-ping <seconds>', 'how often the relay at /relay pings its readers (default 30, as smee.io)', parseSeconds)
    .addHelpText(
      'after',
      examples([
        'svc-migrate sandbox --port 8080',
        'svc-migrate sandbox --tls',
        'svc-migrate sandbox --json --export-seconds 1 | head -1 | jq -r .base_url',
        'svc-migrate sandbox --seed my-org.json',
        'svc-migrate sandbox --issues 10000 --pull-requests 2000',
      ]),
    )
    .action((options: SandboxCommandOptions, command: Command) =>
      run(
        command,
        () => {
          checkNotEmpty(options.seed, '--seed', 'name a seed file, or leave --seed out for the built-in organization');
          return options;
        },
        sandbox,
      ),
    );
}
