import type { Context, Invocation } from '../../context.js';
import { UsageError } from '../../errors.js';
import { promptRefused } from '../../ui/prompt.js';

/** How the confirmation of a deletion names what it needs, and the flag that gives it. */
const CONFIRMATION = { what: 'confirmation', flag: '--yes' };

/** Asks on a TTY; elsewhere `--yes` is the only way to say yes. */
export async function confirmDeletion(context: Context, question: string, yes: boolean | undefined): Promise<void> {
  if (yes) return;
  const ok = await context.prompt.confirm(question, CONFIRMATION.what, CONFIRMATION.flag);
  if (!ok) throw new UsageError('cancelled; nothing was deleted');
}

/** A deletion that could be neither confirmed by `--yes` nor asked about: refused before anything runs. */
export function checkConfirmable(yes: boolean | undefined, invocation: Invocation): void {
  if (!yes && !invocation.settings.interactive) throw promptRefused(CONFIRMATION.what, CONFIRMATION.flag);
}
