import { isIPv4 } from 'node:net';
import { UsageError } from '../../errors.js';
import { isServiceName } from '../archive/service-names.js';
import { redactor } from './refs.js';

// Where each repository goes: the template the user wrote, with the archive's names put in. The
// names come from the archive, so they are let in only when they cannot change what the URL says:
// the characters a repository's name has on the service, and nothing that starts an option or a
// path of its own (docs/reliability.md#extract-and-restore).

/** The transports a template may name: git's own, never `ext::` or another remote helper. */
type Scheme = 'ssh' | 'git' | 'http' | 'https' | 'file';

export interface Target {
  template: string;
  scheme: Scheme;
  /** Text as it may be shown or recorded: the template's secrets (a token, a password) out of it. */
  shown: (text: string) => string;
}

const URL_SCHEME = /^(ssh|git|http|https|file):\/\//i;
/**
 * `user@host:path` or `host:path`, as git reads an scp-like address (no `/` before the colon),
 * never `<helper>::<address>`, which git hands to a remote helper, nor a host that reads as an option.
 */
const SCP_LIKE = /^(?:[^@/\s:-][^@/\s:]*@)?[^@/\s:-][^@/\s:]*:(?!\/\/|:)/;

/** The template, checked: `{repo}` in it, a transport git has, nothing else in braces. */
export function parseTarget(template: string): Target {
  const shown = redactor(template);
  try {
    return { ...checkedTarget(template), shown };
  } catch (error) {
    // The refusal quotes the template: never its token.
    if (error instanceof UsageError) error.message = shown(error.message);
    throw error;
  }
}

function checkedTarget(template: string): Omit<Target, 'shown'> {
  const hint = 'for example --to \'ssh://git@git.example.com/{owner}/{repo}.git\' or --to \'file:///srv/git/{owner}/{repo}.git\'';
  if (!template.includes('{repo}')) throw new UsageError(`--to ${template} has no {repo}: every repository would go to the same place`, { hint });
  const unknown = /\{(?!owner\}|repo\})[^}]*\}/.exec(template);
  if (unknown) throw new UsageError(`--to has ${unknown[0]}, which is neither {owner} nor {repo}`, { hint });
  if (/[\s\0-\x1f\x7f]/.test(template)) throw new UsageError('--to has a space or control character in it', { hint });
  const scheme = URL_SCHEME.exec(template)?.[1]?.toLowerCase() as Scheme | undefined;
  if (scheme) {
    if (scheme === 'file' && !template.toLowerCase().startsWith('file:///')) {
      throw new UsageError(`--to ${template} is a file URL without an absolute path`, { hint: 'write it as file:///absolute/path/{repo}.git' });
    }
    // In a file URL `%` escapes, `?` and `#` end the path: each would name another directory than written.
    // Node reads a file URL's `..`, `.` and `\` as a path does, git as written: they would name two places.
    if (scheme === 'file' && /\\|\/\.\.?(\/|$)/.test(template)) {
      throw new UsageError(`--to ${template} has a "." or ".." segment or a backslash`, { hint: 'write the directory\'s path as it is, from the root' });
    }
    if (scheme === 'file' && /[%?#]/.test(template)) {
      throw new UsageError(`--to ${template} has "%", "?" or "#", which a file URL does not take as part of a path`, { hint: 'use a directory whose path has none of them' });
    }
    return { template, scheme };
  }
  if (SCP_LIKE.test(template)) return { template, scheme: 'ssh' };
  throw new UsageError(`--to ${template} is not a git URL this command pushes to`, { hint: `use ssh://, https://, http://, git://, file:// or user@host:path; ${hint}` });
}

/** The repository's URL, or why its name cannot be put in one. */
export function urlOf(target: Target, repository: string): { url: string } | { problem: string } {
  const [owner = '', repo = ''] = repository.split('/');
  const wrong = [owner, repo].find((name) => !isServiceName(name));
  if (wrong !== undefined) {
    return { problem: `its name has characters a repository's name on the service never has, so it is not put in a URL (only letters, digits, ".", "_" and "-")` };
  }
  return { url: target.template.replaceAll('{owner}', owner).replaceAll('{repo}', repo) };
}

/** Whether a host is this machine: plain http to anywhere else carries the user's credentials in the clear. */
export function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return host === 'localhost' || host === '[::1]' || (isIPv4(host) && host.startsWith('127.'));
  } catch {
    return false;
  }
}
