import type { Context } from '../../context.js';
import { UsageError } from '../../errors.js';

/** Asks on a TTY; elsewhere `--yes` is the only way to say yes. */
export async function confirmDeletion(context: Context, question: string, yes: boolean | undefined): Promise<void> {
  if (yes) return;
  const ok = await context.prompt.confirm(question, 'confirmation', '--yes');
  if (!ok) throw new UsageError('cancelled; nothing was deleted');
}
