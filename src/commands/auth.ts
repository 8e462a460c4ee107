import type { Command } from 'commander';
import { listMigrations } from '../api/migrations.js';
import { clientOptions, type Context, type Runner } from '../context.js';
import { AuthError, CliError, ExitCode, UsageError } from '../errors.js';
import { INPUT_LIMITS, readStdin } from './common/input.js';
import { examples } from './common/options.js';
import type { Source } from '../settings/resolve.js';
import { openSettingsStore } from '../settings/store.js';

interface LoginOptions {
  withToken?: boolean;
}

/** At most a short prefix of a token, so a screen or a log never shows it whole. */
function tokenHint(token: string): string {
  return token.length <= 8 ? '****' : `${token.slice(0, 4)}…`;
}

async function readToken(context: Context, withToken: boolean | undefined): Promise<string> {
  if (withToken) {
    return (await readStdin(context, INPUT_LIMITS.token, 'a token')).toString('utf8').trim();
  }
  return (
    await context.prompt.secret('Token (classic token of an organization owner)', '--with-token (reads the token from stdin)', 'a token')
  ).trim();
}

interface TokenCheck {
  /** valid: owner access; not-owner: the token works but sees no migrations of the org; skipped: nothing to check against. */
  result: 'valid' | 'not-owner' | 'skipped';
  message: string;
}

/** One cheap request (docs/service.md#list-migrations, one migration) that tells what the token can do for the organization. */
async function checkToken(context: Context, token: string): Promise<TokenCheck> {
  const { baseUrl, org } = context.settings;
  if (!baseUrl.value || !org.value) {
    const missing = [baseUrl.value ? '' : 'base URL', org.value ? '' : 'organization'].filter(Boolean).join(' and ');
    return { result: 'skipped', message: `not checked: no ${missing}` };
  }
  const client = await context.factory.apiClient({ ...clientOptions(context, baseUrl.value, token), retry: { tries: 2 } });
  try {
    await listMigrations(client, org.value, { perPage: 1, excludeRepositories: true });
    return { result: 'valid', message: `owner access to ${org.value}'s migrations` };
  } catch (error) {
    if (error instanceof CliError && error.exitCode === ExitCode.NotFound) {
      return { result: 'not-owner', message: `the token works, but its user is not an owner of ${org.value} (or the organization does not exist)` };
    }
    throw error;
  } finally {
    await client.close();
  }
}

const SOURCES: Record<Source, (flag: string, env: string) => string> = {
  flag: (flag) => flag,
  env: (_flag, env) => env,
  config: () => 'the config file',
  sandbox: () => 'the sandbox',
  default: () => 'not set',
};

/** Where a value came from, in the words a user would type. */
function from(source: Source, flag: string, env: string): string {
  return SOURCES[source](flag, env);
}

export function register(program: Command, run: Runner): void {
  const auth = program
    .command('auth')
    .description('store, check or remove the token')
    .addHelpText('after', examples(['svc-migrate auth login', 'echo "$TOKEN" | svc-migrate auth login --with-token', 'svc-migrate auth status']));

  auth
    .command('login')
    .addHelpText(
      'after',
      examples([
        'svc-migrate auth login',
        'echo "$TOKEN" | svc-migrate auth login --with-token --org acme --base-url https://api.example.com',
      ]),
    )
    .description('check a token against the service, then store it (and --org/--base-url when given); hidden prompt on a terminal, or stdin with --with-token')
    .option('--with-token', 'read the token from stdin')
    .action((options: LoginOptions, command: Command) =>
      run(command, async (context) => {
        const token = await readToken(context, options.withToken);
        if (!token) throw new UsageError('no token given', { hint: 'echo "$TOKEN" | svc-migrate auth login --with-token' });
        const { baseUrl, org } = context.settings;
        if (!baseUrl.value) {
          throw new UsageError('no API base URL to check the token against', {
            hint: 'pass --base-url <url> (it is stored too), set SVC_BASE_URL, or run `svc-migrate config set baseUrl <url>`',
          });
        }
        if (!org.value) {
          throw new UsageError('no organization to check the token against', {
            hint: 'pass --org <org> (it is stored too), set SVC_ORG, or run `svc-migrate config set org <org>`',
          });
        }
        // A rejected token (401/403) ends here, before anything is stored.
        const check = await checkToken(context, token);
        if (check.result === 'not-owner') context.out.warn(check.message);
        const store = await openSettingsStore(context.settings.configDir);
        store.set('token', token);
        // `auth login --org acme --base-url …` keeps what it was told, as the help's example expects.
        const kept: string[] = [];
        if (org.source === 'flag') {
          store.set('org', org.value);
          kept.push(`org ${org.value}`);
        }
        if (baseUrl.source === 'flag') {
          store.set('baseUrl', baseUrl.value.replace(/\/+$/, ''));
          kept.push(`baseUrl ${baseUrl.value}`);
        }
        context.out.success(
          `token ${tokenHint(token)} checked (${check.message}) and stored in ${store.path}${kept.length ? `, with ${kept.join(' and ')}` : ''}`,
        );
      }),
    );

  auth
    .command('status')
    .addHelpText('after', examples(['svc-migrate auth status', 'svc-migrate auth status --json']))
    .description('check the token against the service; show it (shortened), the base URL and organization, and where each comes from')
    .action((_options: unknown, command: Command) =>
      run(command, async (context) => {
        const { token, baseUrl, org } = context.settings;
        let check: TokenCheck | { result: 'rejected' | 'unreachable'; message: string };
        let failure: CliError | undefined;
        if (!token.value) check = { result: 'skipped', message: 'not checked: no token' };
        else {
          try {
            check = await checkToken(context, token.value);
          } catch (error) {
            if (!(error instanceof CliError) || error.exitCode === ExitCode.Interrupted) throw error;
            failure = error;
            check = { result: error.exitCode === ExitCode.Auth ? 'rejected' : 'unreachable', message: error.message };
          }
        }
        const status = {
          logged_in: Boolean(token.value),
          source: token.value ? token.source : null,
          token: token.value ? tokenHint(token.value) : null,
          base_url: { value: baseUrl.value ?? null, source: baseUrl.source },
          org: { value: org.value ?? null, source: org.source },
          check,
          config: `${context.settings.configDir}/config.json`,
        };
        const mark = check.result === 'valid' ? context.out.theme.green('✓') : check.result === 'skipped' ? '-' : context.out.theme.red('✗');
        context.out.result(status, (s) =>
          [
            `token     ${s.token ?? 'none: run `svc-migrate auth login` or set SVC_TOKEN'}${s.token ? ` (from ${from(token.source, '--token', 'SVC_TOKEN')})` : ''}`,
            `base URL  ${s.base_url.value ?? 'none'} (${from(baseUrl.source, '--base-url', 'SVC_BASE_URL')})`,
            `org       ${s.org.value ?? 'none'} (${from(org.source, '--org', 'SVC_ORG')})`,
            `check     ${mark} ${check.message}`,
            `config    ${s.config}`,
          ].join('\n'),
        );
        if (!status.logged_in) throw new AuthError('not logged in', { hint: 'svc-migrate auth login' });
        if (failure) throw failure;
        if (check.result === 'not-owner') {
          throw new AuthError(check.message, { hint: 'use a classic token of an owner of the organization' });
        }
      }),
    );

  auth
    .command('logout')
    .addHelpText('after', examples(['svc-migrate auth logout']))
    .description('remove the stored token')
    .action((_options: unknown, command: Command) =>
      run(command, async (context) => {
        const store = await openSettingsStore(context.settings.configDir);
        const had = store.read().token !== undefined;
        store.delete('token');
        context.out.success(had ? 'stored token removed' : 'no token was stored');
      }),
    );
}
