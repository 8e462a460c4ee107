import type { ChalkInstance } from 'chalk';
import type { Source } from '../settings/resolve.js';
import { inertText } from '../support/outside-text.js';

/** What `auth status` prints (docs/cli.md#auth): where each setting comes from, and what the check said. */
export interface AuthStatus {
  logged_in: boolean;
  source: Source | null;
  token: string | null;
  base_url: { value: string | null; source: Source };
  org: { value: string | null; source: Source };
  check: { result: 'valid' | 'not-owner' | 'skipped' | 'rejected' | 'unreachable'; message: string };
  config: string;
}

/** At most a short prefix of a token, so a screen or a log never shows it whole. */
export function tokenHint(token: string): string {
  return token.length <= 8 ? '****' : `${token.slice(0, 4)}…`;
}

const SOURCES: Record<Source, (flag: string, env: string) => string> = {
  flag: (flag) => flag,
  env: (_flag, env) => env,
  config: () => 'the config file',
  sandbox: () => 'the sandbox',
  default: () => 'not set',
};

export function authStatusLines(status: AuthStatus, theme: ChalkInstance): string {
  const { check } = status;
  const mark = check.result === 'valid' ? theme.green('✓') : check.result === 'skipped' ? '-' : theme.red('✗');
  const token = status.token ? `${status.token} (from ${SOURCES[status.source ?? 'default']('--token', 'SVC_TOKEN')})` : 'none: run `svc-migrate auth login` or set SVC_TOKEN';
  return [
    `token     ${token}`,
    `base URL  ${status.base_url.value ?? 'none'} (${SOURCES[status.base_url.source]('--base-url', 'SVC_BASE_URL')})`,
    `org       ${status.org.value ?? 'none'} (${SOURCES[status.org.source]('--org', 'SVC_ORG')})`,
    // The service's answer, when it refused: inert.
    `check     ${mark} ${inertText(check.message)}`,
    `config    ${status.config}`,
  ].join('\n');
}
