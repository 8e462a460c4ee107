import type { Context } from '../../context.js';
import { type RefusedRepository, refusedRepositories } from '../../core/refused-repositories.js';
import { ValidationError } from '../../errors.js';
import { inertText } from '../../support/outside-text.js';
import { askRepositories } from './flags.js';

/** The refusal a start's failure is: the service's own error, as `startMigration` throws it. */
const asThrown = (error: unknown) => (error instanceof ValidationError ? error : undefined);

/**
 * Starts with the repositories typed at the prompt (`asked`): while the service refuses some of them
 * by name, it says which and why and asks again, the others typed already. Such a 422 started nothing
 * (docs/service.md#start-migration), so starting again is safe; the loop ends with the owner, who
 * answers each round (Ctrl-C is exit 130). Names given as arguments or in a file are not asked
 * about: the refusal ends the command as it would in a script (exit 5). `refusal` finds the
 * service's 422 in what `attempt` threw, undefined when the failure is another (or came after the start).
 */
export async function startAsking<T>(
  context: Context,
  repositories: string[],
  asked: boolean,
  attempt: (repositories: string[]) => Promise<T>,
  refusal: (error: unknown) => ValidationError | undefined = asThrown,
): Promise<T> {
  let names = repositories;
  for (;;) {
    try {
      return await attempt(names);
    } catch (error) {
      const validation = asked ? refusal(error) : undefined;
      const refused = validation && refusedRepositories(validation, names);
      if (!refused) throw error;
      context.out.warn(refusedLine(refused, names.length));
      const wrong = new Set(refused.map((r) => r.name));
      names = await askRepositories(context, names.filter((name) => !wrong.has(name)));
    }
  }
}

/** Which repositories the service refused and why, in its words drawn inert; that nothing started. */
function refusedLine(refused: RefusedRepository[], asked: number): string {
  const which = refused.length === asked ? (asked === 1 ? 'the repository' : `all ${asked} repositories`) : `${refused.length} of the ${asked} repositories`;
  const why = refused.map(({ name, reason }) => `${name}: ${inertText(reason)}`).join('; ');
  return `the service refused ${which}, so nothing was started (${why}); correct the list and press Enter`;
}
