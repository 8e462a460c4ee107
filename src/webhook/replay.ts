import { signatureHeaders } from './signature.js';
import type { ForwardHeader } from './forward-headers.js';
import type { Selected } from './replay-select.js';
import type { PostResult } from './sender.js';
import { parseSaved, readSaved, type SavedDelivery, type SavedEntry } from './store.js';

export interface ReplayOutcome {
  file: string;
  status: number | null;
  ms: number | null;
  error?: string;
  /** Not a delivery that can be sent (a link, a FIFO, too big, malformed): reported and left alone. */
  skipped?: boolean;
}

const SIGNATURE = /^x-hub-signature(-256)?$/i;

/**
 * Re-sends the selected deliveries byte for byte, in their original order, one file in memory at a
 * time; with `resignWith`, signed anew with that secret. A file that is not a saved delivery is
 * reported and skipped; a failure to send one is reported and the rest are sent; `sent` is told of
 * each one sent (answered or not), `done` of each file's outcome as it comes. At Ctrl-C no file is sent after the one under way: what was
 * done until then is returned, `interrupted`.
 */
export async function replaySaved(
  { entries, unreadable }: Pick<Selected, 'entries' | 'unreadable'>,
  url: string,
  signal: AbortSignal,
  options: {
    resignWith?: string | undefined;
    sent?: (entry: SavedEntry, delivery: SavedDelivery, result: PostResult | undefined) => void;
    done?: (outcome: ReplayOutcome) => void;
  } = {},
): Promise<{ outcomes: ReplayOutcome[]; total: number; interrupted: boolean; inFlight?: string }> {
  const { resignWith, sent = () => {} } = options;
  const skip = (file: string, error: string): ReplayOutcome => ({ file, status: null, ms: null, error, skipped: true });
  const outcomes: ReplayOutcome[] = [];
  const report = (outcome: ReplayOutcome) => {
    outcomes.push(outcome);
    options.done?.(outcome);
  };
  for (const { name, reason } of unreadable) report(skip(name, reason));
  const total = unreadable.length + entries.length;
  for (const entry of entries) {
    if (signal.aborted) return { outcomes, total, interrupted: true };
    let delivery;
    try {
      delivery = parseSaved(entry.name, await readSaved(entry.file));
    } catch (error) {
      report(skip(entry.name, (error as Error).message.replace(`${entry.name} is `, '')));
      continue;
    }
    try {
      const result = await resend(url, delivery.rawHeaders, delivery.body, { resignWith, signal });
      sent(entry, delivery, result);
      report({ file: entry.name, status: result.status, ms: result.ms });
    } catch (error) {
      // The receiver may have it already: the one under way at Ctrl-C is named.
      if (signal.aborted) return { outcomes, total, interrupted: true, inFlight: entry.name };
      sent(entry, delivery, undefined);
      report({ file: entry.name, status: null, ms: null, error: (error as Error).message });
    }
  }
  return { outcomes, total, interrupted: false };
}

/**
 * Sends a delivery again: its body byte for byte, its headers as received but those of its
 * connection; with `resignWith`, both signatures made anew with that secret instead of its own;
 * `added` fields (`--forward-header`) after them, where the delivery has none of that name.
 */
export async function resend(
  url: string,
  rawHeaders: string[],
  body: Buffer,
  options: { resignWith?: string | undefined; added?: readonly ForwardHeader[]; timeoutMs?: number; signal?: AbortSignal | undefined },
): Promise<PostResult> {
  const { postDelivery, sendableHeaders } = await import('./sender.js');
  const { resignWith } = options;
  const headers = sendableHeaders(rawHeaders, (name) => resignWith !== undefined && SIGNATURE.test(name));
  if (resignWith !== undefined) headers.push(...Object.entries(signatureHeaders(body, resignWith)).flat());
  const own = new Set(headers.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase()));
  // As the forwarder sends them: a value's UTF-8 bytes, one character each for undici.
  for (const { name, value } of options.added ?? []) if (!own.has(name.toLowerCase())) headers.push(name, Buffer.from(value).toString('latin1'));
  return postDelivery(url, headers, body, options.timeoutMs ?? 30_000, options.signal);
}
