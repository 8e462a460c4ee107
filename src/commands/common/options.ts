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

/** A TCP port: 0 (any free port) to 65535. */
export function parsePort(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 65535) {
    throw new InvalidArgumentError(`a port is a whole number from 0 to 65535 (0 picks a free one), not "${value}"`);
  }
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

/** A byte count: a whole number, optionally with a binary K, M, G or T suffix (`--max-size 200G`). */
export function parseByteSize(value: string): number {
  const match = /^(\d+)([KMGT]i?B?)?$/i.exec(value.trim());
  if (!match) throw new InvalidArgumentError(`expected a size in bytes such as 500M or 200G, not "${value}"`);
  const power = 'KMGT'.indexOf((match[2] ?? ' ').charAt(0).toUpperCase()) + 1;
  const bytes = Number(match[1]) * 1024 ** power;
  if (bytes < 1 || !Number.isSafeInteger(bytes)) throw new InvalidArgumentError(`"${value}" is not a usable size`);
  return bytes;
}
