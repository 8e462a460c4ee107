import { expect } from 'vitest';
import { type ParsedCli, parseCli, type ParseOptions } from './run-cli.js';

// What the tests of test/commands/ expect of a command line read up to its options (parseCli):
// the options a command would run with, or the usage error a user would see.

/** The options a command would run with; the test fails with its stderr if they were refused. */
export async function options(args: string[], given: ParseOptions = {}): Promise<unknown> {
  const result = await parseCli(args, given);
  expect(result.code, result.stderr).toBe(0);
  expect(result.stderr).toBe('');
  return result.options;
}

/** A usage error: exit 2, `message` on the error line and `hint` on the hint line, and nothing run. */
export async function refused(
  args: string[],
  message: RegExp | string,
  hint?: RegExp | string,
  given: ParseOptions = {},
): Promise<ParsedCli> {
  const result = await parseCli(args, given);
  expect(result.code, result.stderr).toBe(2);
  expect(result.command).toBeUndefined();
  expect(result.stdout).toBe('');
  const [error = '', hintLine = ''] = result.stderr.split('\n');
  if (typeof message === 'string') expect(error).toBe(`error: ${message}`);
  else expect(result.stderr).toMatch(message);
  if (typeof hint === 'string') expect(hintLine).toBe(`hint: ${hint}`);
  else if (hint) expect(result.stderr).toMatch(hint);
  expect(result.stderr).not.toMatch(/bug|unexpected error/i);
  return result;
}

/** A usage error with --json: exit 2, nothing on stdout, one JSON line on stderr; its message. */
export async function jsonRefusal(args: string[], given: ParseOptions = {}): Promise<string> {
  const result = await parseCli(args, given);
  expect(result.code, result.stderr).toBe(2);
  expect(result.stdout).toBe('');
  const lines = result.stderr.trim().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  const { error } = JSON.parse(lines[0] as string) as { error: { code: number; status: null; message: string } };
  expect(error).toMatchObject({ code: 2, status: null });
  expect(error.message).not.toMatch(/^error:/);
  return error.message;
}

/** What a prompt's refusal adds to its hint. */
export const NO_PROMPT = '(no prompts without a TTY, in CI or with --no-input)';
