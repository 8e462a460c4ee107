import { InvalidArgumentError } from 'commander';

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

/** `--interval` in seconds, fractions allowed (tests and impatient users). */
export function parseSeconds(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value) || Number(value) <= 0) {
    throw new InvalidArgumentError(`expected a number of seconds above 0, not "${value}"`);
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
