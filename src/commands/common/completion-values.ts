import type { Argument, Option } from 'commander';
import { CATALOGUE } from '../../webhook/catalogue.js';

/** What the completion scripts offer for an option or argument beyond commander's choices. */
export interface Suggested {
  values: () => readonly string[];
  /** The value is a comma-separated list of them (`--events push,issues`). */
  list: boolean;
}

const SUGGESTED = new WeakMap<Option | Argument, Suggested>();

/**
 * Values for the completion scripts to offer, which unlike commander's `choices` are not the only
 * ones accepted: `send --event` sends an event the catalogue lacks, with a warning.
 */
export function suggest<T extends Option | Argument>(item: T, values: () => readonly string[], list = false): T {
  SUGGESTED.set(item, { values, list });
  return item;
}

export function suggested(item: Option | Argument): Suggested | undefined {
  return SUGGESTED.get(item);
}

/** The catalogue's event names, sorted: what `--event`, `--events` and `webhook events NAME` complete. */
export function eventNames(): string[] {
  return [...CATALOGUE.keys()].sort();
}
