import type { Command } from 'commander';
import { listMigrations } from '../api/migrations.js';
import type { Context, Runner } from '../context.js';
import { AuthError, CliError, ExitCode, UsageError } from '../errors.js';
import { examples } from './common/options.js';
import { configDirectory, openSettingsStore } from '../settings/store.js';

interface LoginOptions {
  withToken?: boolean;
}

/** At most a short prefix of a token, so a screen or a log never shows it whole. */
function tokenHint(token: string): string {
  return token.length <= 8 ? '****' : `${token.slice(0, 4)}…`;
}

async function readToken(context: Context, withToken: boolean | undefined): Promise<string> {
  if (withToken) {
    const chunks: Buffer[] = [];
    for await (const chunk of context.io.stdin) chunks.push(Buffer.from(chunk as Buffer));
    return Buffer.concat(chunks).toString('utf8').trim();
  }
  return (await context.prompt.secret('Token (classic token of an organization owner)', '--with-token (reads stdin)')).trim();
}

/** One cheap request that tells what the token can do, when a base URL and org are known. */
async function checkToken(context: Context, token: string): Promise<string | undefined> {
  const { baseUrl, org } = context.settings;
  if (!baseUrl.value || !org.value) return undefined;
  const { USER_AGENT } = await import('../version.js');
  const client = await context.factory.apiClient({
    baseUrl: baseUrl.value,
    token,
    apiVersion: context.settings.apiVersion.value,
    userAgent: USER_AGENT,
    insecure: context.settings.insecure,
    retry: { tries: 2 },
    signal: context.signal,
    clock: context.clock,
  });
  try {
    await listMigrations(client, org.value, { perPage: 1, excludeRepositories: true });
    return `owner access to ${org.value}'s migrations`;
  } catch (error) {
    if (error instanceof CliError && error.exitCode === ExitCode.NotFound) {
      context.out.warn(`the token works, but its user is not an owner of ${org.value} (or the organization does not exist)`);
      return 'no owner access';
    }
    throw error;
  } finally {
    await client.close();
  }
}

export function register(program: Command, run: Runner): void {
  const auth = program
    .command('auth')
    .description('store, check or remove the token')
    .addHelpText(
      'after',
      `
Examples:
  svc-migrate auth login
  echo "$TOKEN" | svc-migrate auth login --with-token
  svc-migrate auth status`,
    );

  auth
    .command('login')
    .addHelpText('after', examples(['svc-migrate auth login', 'echo "$TOKEN" | svc-migrate auth login --with-token --org acme --base-url https://api.example.com']))
    .description('store a token (hidden prompt on a terminal, or stdin with --with-token); checks it first')
    .option('--with-token', 'read the token from stdin')
    .action((options: LoginOptions, command: Command) =>
      run(command, async (context) => {
        const token = await readToken(context, options.withToken);
        if (!token) throw new UsageError('no token given');
        const found = await checkToken(context, token);
        const store = await openSettingsStore(configDirectory(context.io.env));
        store.set('token', token);
        context.out.success(`token ${tokenHint(token)} stored in ${store.path}${found ? ` (${found})` : ''}`);
      }),
    );

  auth
    .command('status')
    .addHelpText('after', examples(['svc-migrate auth status', 'svc-migrate auth status --json']))
    .description('where the token comes from (flag, env, stored), without showing it')
    .action((_options: unknown, command: Command) =>
      run(command, async (context) => {
        const { token } = context.settings;
        const status = {
          logged_in: Boolean(token.value),
          source: token.value ? token.source : null,
          token: token.value ? tokenHint(token.value) : null,
          config: `${configDirectory(context.io.env)}/config.json`,
        };
        const where = { flag: '--token', env: 'SVC_TOKEN', config: 'the stored config', sandbox: 'the sandbox', default: '' };
        context.out.result(status, (s) =>
          s.logged_in ? `token ${s.token} from ${where[token.source]} (${s.config})` : 'no token: run `svc-migrate auth login` or set SVC_TOKEN',
        );
        if (!status.logged_in) throw new AuthError('not logged in', { hint: 'svc-migrate auth login' });
      }),
    );

  auth
    .command('logout')
    .addHelpText('after', examples(['svc-migrate auth logout']))
    .description('remove the stored token')
    .action((_options: unknown, command: Command) =>
      run(command, async (context) => {
        const store = await openSettingsStore(configDirectory(context.io.env));
        const had = store.read().token !== undefined;
        store.delete('token');
        context.out.success(had ? 'stored token removed' : 'no token was stored');
      }),
    );
}
