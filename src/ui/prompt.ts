import { UsageError } from '../errors.js';

/** Prompts through @inquirer/prompts (loaded on first use); refuses when prompting is not allowed. */
export class Prompter {
  private readonly interactive: boolean;

  constructor(interactive: boolean) {
    this.interactive = interactive;
  }

  private require(what: string, flag: string): void {
    if (!this.interactive) {
      throw new UsageError(`${what} is required`, {
        hint: `pass ${flag} (no prompts without a TTY, in CI or with --no-input)`,
      });
    }
  }

  async input(message: string, what: string, flag: string): Promise<string> {
    this.require(what, flag);
    const { input } = await import('@inquirer/prompts');
    return input({ message, required: true });
  }

  /** Hidden input (secrets, tokens). */
  async secret(message: string, flag: string): Promise<string> {
    this.require('a secret', flag);
    const { password } = await import('@inquirer/prompts');
    return password({ message, mask: true });
  }

  async checkbox<T extends string>(message: string, choices: { value: T; name: string }[]): Promise<T[]> {
    this.require('a choice', 'the flags');
    const { checkbox } = await import('@inquirer/prompts');
    return checkbox({ message, choices });
  }

  async confirm(message: string, what: string, flag: string): Promise<boolean> {
    this.require(what, flag);
    const { confirm } = await import('@inquirer/prompts');
    return confirm({ message, default: false });
  }
}
