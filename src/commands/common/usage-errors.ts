import type { CommanderError } from 'commander';
import { UsageError } from '../../errors.js';

// commander's own words for a command line it refuses ("command-argument value 'abc' is invalid for
// argument 'migration-id'. …") said in the tool's shape: what is wrong as `error:`, and as `hint:`
// where to read how the command is used. Its texts are matched as commander 14 writes them; a text
// not matched keeps its words, so an unknown one still reads.

/** The nearest name commander suggests: `(Did you mean list?)`. */
const SUGGESTION = /\n?\(Did you mean (.+)\?\)\s*$/;

const ARGUMENT_INVALID = /^command-argument value '(.*)' is invalid for argument '(.*)'\. (.*)$/s;
const OPTION_INVALID = /^option '(\S+)[^']*' argument '(.*)' is invalid\. (.*)$/s;
const CHOICES = /^Allowed choices are (.*)\.$/s;
const EXCESS = /^too many arguments(?: for '.*')?\. Expected (\d+) arguments? but got (\d+)\.$/;
const MISSING_ARGUMENT = /^missing required argument '(.*)'$/;
const OPTION_VALUE_MISSING = /^option '((\S+)[^']*)' argument missing$/;
const OPTION_REQUIRED = /^required option '(.*)' not specified$/;

/** What is wrong with the value of `name` (`<key>`, `--state`): the choices, or the parser's reason. */
function invalidValue(name: string, value: string, reason: string): string {
  const choices = CHOICES.exec(reason);
  return choices ? `${name} must be one of ${choices[1]}, not "${value}"` : `${name}: ${reason}`;
}

function what(message: string, command: string): string {
  const argument = ARGUMENT_INVALID.exec(message);
  if (argument) return invalidValue(`<${argument[2]}>`, argument[1] as string, argument[3] as string);
  const option = OPTION_INVALID.exec(message);
  if (option) return invalidValue(option[1] as string, option[2] as string, option[3] as string);
  const excess = EXCESS.exec(message);
  if (excess) {
    const expected = Number(excess[1]);
    return `too many arguments: svc-migrate ${command} takes ${expected === 0 ? 'none' : `at most ${expected}`}, ${excess[2]} given`;
  }
  const missing = MISSING_ARGUMENT.exec(message);
  if (missing) return `missing the <${missing[1]}> argument`;
  const valueMissing = OPTION_VALUE_MISSING.exec(message);
  if (valueMissing) return `${valueMissing[2]} needs a value (${valueMissing[1]})`;
  const required = OPTION_REQUIRED.exec(message);
  if (required) return `${required[1]} is required`;
  return message;
}

/**
 * A command line commander refused, as a usage error (exit 2). `command` is the command that
 * refused it (`list`, `webhook send`; empty for the program itself): its help is the hint.
 */
export function commandLineError(error: CommanderError, command: string): UsageError {
  const text = error.message.replace(/^error: /, '');
  const suggestion = SUGGESTION.exec(text);
  const help = `\`svc-migrate ${command ? `${command} ` : ''}--help\``;
  return new UsageError(what(text.replace(SUGGESTION, ''), command), {
    hint: `${suggestion ? `did you mean ${suggestion[1]}? ` : ''}see ${help}`,
  });
}
