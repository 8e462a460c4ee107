import type { Command } from 'commander';
import { clientOptions, type Context, type Invocation, type Runner } from '../context.js';
import { checkToken, type TokenCheck } from '../core/auth.js';
import { AuthError, CliError, ExitCode, InterruptedError, UsageError } from '../errors.js';
import { INPUT_LIMITS, readStdin } from './common/input.js';
import { examples } from './common/options.js';
import { checkedConfigValue, openSettingsStore } from '../settings/store.js';
import { type AuthStatus, authStatusLines, tokenHint } from '../ui/auth.js';
import { promptRefused } from '../ui/prompt.js';

interface LoginFlags {
  withToken?: boolean;
}

interface LoginOptions {
  withToken: boolean;
  /** A base URL given as a flag, checked as `config set` checks it: it is stored too. */
  baseUrl?: string;
}

/** What is given as a flag is stored: it must pass what `config set` asks of it (a CA file is read when the command runs). */
function parseLoginOptions(flags: LoginFlags, { settings }: Invocation): LoginOptions {
  const { org, baseUrl } = settings;
  if (org.source === 'flag' && org.value) checkedConfigValue('org', org.value);
  const keptBaseUrl = baseUrl.source === 'flag' && baseUrl.value ? checkedConfigValue('baseUrl', baseUrl.value) : undefined;
  if (!flags.withToken && !settings.interactive) throw promptRefused(TOKEN_ASKED.what, TOKEN_ASKED.flag);
  return { withToken: Boolean(flags.withToken), ...(keptBaseUrl === undefined ? {} : { baseUrl: keptBaseUrl }) };
}

/** How the prompt for a token names what it asks for, and the flag that gives it instead. */
const TOKEN_ASKED = { what: 'a token', flag: '--with-token (reads the token from stdin)' };

async function readToken(context: Context, withToken: boolean | undefined): Promise<string> {
  if (withToken) {
    return (await readStdin(context, INPUT_LIMITS.token, 'a token')).toString('utf8').trim();
  }
  const typed = await context.prompt.secret('Token (classic token of an organization owner)', TOKEN_ASKED.flag, TOKEN_ASKED.what, (answer) => {
    if (!answer.trim()) throw new UsageError('no token given');
  });
  return typed.trim();
}

/** The token checked against the organization (core/auth.ts) with the client every command uses. */
async function check(context: Context, baseUrl: string, org: string, token: string): Promise<TokenCheck> {
  const client = await context.factory.apiClient({ ...clientOptions(context, baseUrl, token), retry: { tries: 2 } });
  try {
    return await checkToken(client, org);
  } finally {
    await client.close();
  }
}

/** Checks the token, then stores it (and `--org`, `--base-url`, `--ca-file` when given): a rejected token is never stored. */
async function login(context: Context, options: LoginOptions): Promise<void> {
  const { baseUrl, org, caFile } = context.settings;
  const keptBaseUrl = options.baseUrl;
  const keptCaFile = caFile.source === 'flag' && caFile.value ? checkedConfigValue('caFile', caFile.value) : undefined;
  // Everything known without the token is checked before it is asked for: a token typed for nothing is lost.
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
  const token = await readToken(context, options.withToken);
  if (!token) throw new UsageError('no token given', { hint: 'echo "$TOKEN" | svc-migrate auth login --with-token' });
  // A rejected token (401/403) ends here, before anything is stored.
  const result = await check(context, baseUrl.value, org.value, token);
  if (result.result === 'not-owner') context.out.warn(result.message);
  const store = await openSettingsStore(context.settings.configDir);
  store.set('token', token);
  // `auth login --org acme --base-url …` keeps what it was told, as the help's example expects.
  const kept: string[] = [];
  if (org.source === 'flag') {
    store.set('org', org.value);
    kept.push(`org ${org.value}`);
  }
  if (keptBaseUrl !== undefined) {
    store.set('baseUrl', keptBaseUrl);
    kept.push(`baseUrl ${baseUrl.value}`);
  }
  if (keptCaFile !== undefined) {
    store.set('caFile', keptCaFile);
    kept.push(`caFile ${keptCaFile}`);
  }
  context.out.success(`token ${tokenHint(token)} checked (${result.message}) and stored in ${store.path}${kept.length ? `, with ${kept.join(' and ')}` : ''}`);
}

/** Where the token, base URL and organization come from, and what the service says of the token. */
async function status(context: Context): Promise<AuthStatus> {
  const { token, baseUrl, org } = context.settings;
  let result: AuthStatus['check'];
  let failure: CliError | undefined;
  if (!token.value) result = { result: 'skipped', message: 'not checked: no token' };
  else if (!baseUrl.value || !org.value) {
    const missing = [baseUrl.value ? '' : 'base URL', org.value ? '' : 'organization'].filter(Boolean).join(' and ');
    result = { result: 'skipped', message: `not checked: no ${missing}` };
  } else {
    try {
      result = await check(context, baseUrl.value, org.value, token.value);
    } catch (error) {
      if (!(error instanceof CliError) || error instanceof InterruptedError) throw error;
      failure = error;
      result = { result: error.exitCode === ExitCode.Auth ? 'rejected' : 'unreachable', message: error.message };
    }
  }
  const report: AuthStatus = {
    logged_in: Boolean(token.value),
    source: token.value ? token.source : null,
    token: token.value ? tokenHint(token.value) : null,
    base_url: { value: baseUrl.value ?? null, source: baseUrl.source },
    org: { value: org.value ?? null, source: org.source },
    check: result,
    config: `${context.settings.configDir}/config.json`,
  };
  context.out.result(report, (s) => authStatusLines(s, context.out.theme));
  if (!report.logged_in) throw new AuthError('not logged in', { hint: 'svc-migrate auth login' });
  if (failure) throw failure;
  if (result.result === 'not-owner') throw new AuthError(result.message, { hint: 'use a classic token of an owner of the organization' });
  return report;
}

async function logout(context: Context): Promise<void> {
  const store = await openSettingsStore(context.settings.configDir);
  const had = store.read().token !== undefined;
  store.delete('token');
  context.out.success(had ? 'stored token removed' : 'no token was stored');
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
    .description('check a token against the service, then store it (and --org/--base-url/--ca-file when given); hidden prompt on a terminal, or stdin with --with-token')
    .option('--with-token', 'read the token from stdin')
    .action((flags: LoginFlags, command: Command) => run(command, (invocation) => parseLoginOptions(flags, invocation), login));

  auth
    .command('status')
    .addHelpText('after', examples(['svc-migrate auth status', 'svc-migrate auth status --json']))
    .description('check the token against the service; show it (shortened), the base URL and organization, and where each comes from')
    .action((_options: unknown, command: Command) => run(command, () => ({}), (context) => status(context).then(() => {})));

  auth
    .command('logout')
    .addHelpText('after', examples(['svc-migrate auth logout']))
    .description('remove the stored token')
    .action((_options: unknown, command: Command) => run(command, () => ({}), logout));
}
