import type { ValidationError } from '../errors.js';

/** A repository of a start that the service refused, with its reason. */
export interface RefusedRepository {
  name: string;
  reason: string;
}

/**
 * The repositories of a start's `repositories` that a 422 names, with the service's reason, when it
 * names nothing else: each entry an item of `repositories` (its `value`, when given, that item).
 * Any other refusal (another field, "spammed", a message alone) is undefined: the start's failure.
 * docs/service.md#start-migration: such a 422 started nothing, so the rest may be started alone.
 */
export function refusedRepositories(error: ValidationError, repositories: string[]): RefusedRepository[] | undefined {
  if (error.items.length === 0) return undefined;
  const refused = new Map<string, string>();
  for (const item of error.items) {
    const name = repositories[item.index];
    if (item.field !== 'repositories' || name === undefined) return undefined;
    if (typeof item.value === 'string' && item.value.toLowerCase() !== name.toLowerCase()) return undefined;
    refused.set(name, item.reason);
  }
  return [...refused].map(([name, reason]) => ({ name, reason }));
}
