import { Writable } from 'node:stream';
import { InterruptedError, UsageError } from '../errors.js';

/** SGR sequences (colour, bold, dim): what `--no-color` takes out of a prompt, cursor moves kept. */
const SGR = /\x1b\[[0-9;]*m/g;

/** A terminal stream that passes everything but colour; the prompt still reads its size from it. */
function colourless(target: NodeJS.WriteStream): Writable {
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      target.write(String(chunk).replace(SGR, ''), callback);
    },
  });
  for (const property of ['columns', 'rows', 'isTTY'] as const) {
    Object.defineProperty(stream, property, { get: () => target[property] });
  }
  return stream;
}

/**
 * What a prompt says where it may not ask (no TTY, CI, --no-input): `what` is required, and `flag`
 * gives it. A command's options step says the same before anything runs, when it knows it would ask.
 */
export function promptRefused(what: string, flag: string): UsageError {
  return new UsageError(`${what} is required`, { hint: `pass ${flag} (no prompts without a TTY, in CI or with --no-input)` });
}

/** Prompts through @inquirer/prompts (loaded on first use); refuses when prompting is not allowed. */
export class Prompter {
  private readonly interactive: boolean;
  private readonly signal: AbortSignal | undefined;
  /** `--no-color` (false): the prompts' own colours are taken out too, as NO_COLOR does for them. */
  private readonly color: boolean | undefined;

  constructor(interactive: boolean, signal?: AbortSignal, color?: boolean) {
    this.interactive = interactive;
    this.signal = signal;
    this.color = color;
  }

  private require(what: string, flag: string): void {
    if (!this.interactive) throw promptRefused(what, flag);
  }

  /**
   * Ctrl-C at a prompt (inquirer's ExitPromptError) or our own abort is an interruption: exit 130
   * without a message, as a shell user expects.
   */
  private async ask<T>(prompt: (context: { signal?: AbortSignal; output?: Writable }) => Promise<T>): Promise<T> {
    // Inquirer writes to stdout, and colours unless NO_COLOR is set: --no-color must reach it too.
    // One stream per prompt: a prompt ends the stream it was given when it is done.
    const output = this.color === false ? colourless(process.stdout) : undefined;
    try {
      return await prompt({ ...(this.signal ? { signal: this.signal } : {}), ...(output ? { output } : {}) });
    } catch (error) {
      const name = (error as Error | undefined)?.name;
      if (name === 'ExitPromptError' || name === 'AbortPromptError') throw new InterruptedError('');
      throw error;
    }
  }

  /**
   * A line of text. `check` throws a UsageError for an answer it refuses: its message is shown under
   * the prompt, which asks again (one mistyped name must not end the command). `typed` is already on
   * the line, to be edited or taken with Enter.
   */
  async input(message: string, what: string, flag: string, check?: (answer: string) => void, typed?: string): Promise<string> {
    this.require(what, flag);
    const { input } = await import('@inquirer/prompts');
    const prefilled = typed ? { default: typed, prefill: 'editable' as const } : {};
    return this.ask((context) => input({ message, required: true, ...prefilled, ...validated(check) }, context));
  }

  /** Hidden input (secrets, tokens); `what` names it in the error when there is no terminal; `check` as for input. */
  async secret(message: string, flag: string, what = 'a secret', check?: (answer: string) => void): Promise<string> {
    this.require(what, flag);
    const { password } = await import('@inquirer/prompts');
    return this.ask((context) => password({ message, mask: true, ...validated(check) }, context));
  }

  async checkbox<T extends string>(message: string, choices: { value: T; name: string }[]): Promise<T[]> {
    this.require('a choice', 'the flags');
    const { checkbox } = await import('@inquirer/prompts');
    return this.ask((context) => checkbox({ message, choices }, context));
  }

  /** A yes/no question; No unless `defaultYes` (Enter then means yes). */
  async confirm(message: string, what: string, flag: string, defaultYes = false): Promise<boolean> {
    this.require(what, flag);
    const { confirm } = await import('@inquirer/prompts');
    return this.ask((context) => confirm({ message, default: defaultYes }, context));
  }
}

/** inquirer's `validate` from a check that throws a UsageError: its message, or true. */
function validated(check: ((answer: string) => void) | undefined): { validate?: (answer: string) => string | true } {
  if (!check) return {};
  return {
    validate(answer) {
      try {
        check(answer);
        return true;
      } catch (error) {
        if (error instanceof UsageError) return error.hint ? `${error.message} (${error.hint})` : error.message;
        throw error;
      }
    },
  };
}
