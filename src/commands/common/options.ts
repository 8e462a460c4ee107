import { InvalidArgumentError } from 'commander';
import { UsageError } from '../../errors.js';
import { parseDuration } from '../../settings/resolve.js';

/** commander argument parser for `<migration-id>`: a positive integer (docs/cli.md). */
export function parseMigrationId(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw new InvalidArgumentError(`a migration id is a positive integer, not "${value}"`);
  }
  return Number(value);
}

export function parsePositiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new InvalidArgumentError(`expected a positive integer, not "${value}"`);
  }
  return Number(value);
}

export function parseNonNegativeInt(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`expected a whole number, not "${value}"`);
  return Number(value);
}

/** A TCP port: 0 (any free port) to 65535. */
export function parsePort(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 65535) {
    throw new InvalidArgumentError(`a port is a whole number from 0 to 65535 (0 picks a free one), not "${value}"`);
  }
  return Number(value);
}

/** About 23 days: below the longest a timer can hold (2^31 - 1 ms, 2,147,483 s), in round figures. */
const MAX_SECONDS = 2_000_000;

/** `<seconds>` options: above 0, fractions to the millisecond (a timer counts whole ms), at most MAX_SECONDS. */
export function parseSeconds(value: string): number {
  if (!/^\d+(\.\d{1,3})?$/.test(value) || Number(value) <= 0 || Number(value) > MAX_SECONDS) {
    throw new InvalidArgumentError(`expected a number of seconds above 0 and at most ${MAX_SECONDS}, to the millisecond, not "${value}"`);
  }
  return Number(value);
}

export function parseNonNegativeNumber(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value)) throw new InvalidArgumentError(`expected a number, not "${value}"`);
  return Number(value);
}

/** The Examples section of a command's help. */
export function examples(lines: string[]): string {
  return `\nExamples:\n${lines.map((line) => `  ${line}`).join('\n')}`;
}

/** A byte count: a whole number, optionally with a binary K, M, G or T suffix (`--max-size 200G`). */
export function parseByteSize(value: string): number {
  const match = /^(\d+)([KMGT]i?B?)?$/i.exec(value.trim());
  if (!match) throw new InvalidArgumentError(`expected a size in bytes such as 500M or 200G, not "${value}"`);
  const power = 'KMGT'.indexOf((match[2] ?? ' ').charAt(0).toUpperCase()) + 1;
  const bytes = Number(match[1]) * 1024 ** power;
  if (bytes < 1 || !Number.isSafeInteger(bytes)) throw new InvalidArgumentError(`"${value}" is not a usable size`);
  return bytes;
}

/**
 * A file or directory flag given as "" (`--save "$UNSET"`) is a mistake to say, not the flag left
 * out: taken as absent, deliveries would go unsaved, the example payload be sent, the current
 * directory be exported into.
 */
export function checkNotEmpty(value: string | undefined, flag: string, hint: string): void {
  if (value === '') throw new UsageError(`${flag} is empty`, { hint });
}

/**
 * A webhook secret as given (`where`: the flag, the variable, the prompt): one empty or of spaces
 * alone (`--secret "$UNSET"`, Enter at the prompt) is a key nobody chose, with which anyone's
 * signature checks out.
 */
export function checkedSecret(secret: string, where: string, hint: string): string {
  if (secret.trim() === '') throw new UsageError(`${where} is ${secret === '' ? 'empty' : 'only whitespace'}`, { hint });
  return secret;
}

/** The secret of SVC_WEBHOOK_SECRET, checked; undefined when it is not set. */
export function envSecret(fromEnv: string | undefined): string | undefined {
  return fromEnv === undefined ? undefined : checkedSecret(fromEnv, 'SVC_WEBHOOK_SECRET', 'set SVC_WEBHOOK_SECRET to the webhook\'s secret, or unset it');
}

/** The secret of `--secret`, else of SVC_WEBHOOK_SECRET, checked; undefined when neither is given. */
export function givenSecret(flag: string | undefined, fromEnv: string | undefined, flagHint: string): string | undefined {
  return flag === undefined ? envSecret(fromEnv) : checkedSecret(flag, '--secret', flagHint);
}

export const GIT_CHECK_TIME = 'the time git may take for the whole archive (default: 2m, plus 1s per MiB of the archive and 0.1s per repository)';

/** `--git-check-time`: a duration above 0, in milliseconds; undefined when not given. */
export function gitCheckTime(value: string | undefined, aside = ''): number | undefined {
  const ms = value === undefined ? undefined : parseDuration(value, '--git-check-time');
  if (ms === 0) throw new UsageError(`--git-check-time takes a duration above 0${aside}`);
  return ms;
}
