import type { ChalkInstance } from 'chalk';
import type { EventSpec } from '../webhook/catalogue.js';
import type { ForwardRecord } from '../webhook/forwarder.js';
import type { ReceivedDelivery, Rejection } from '../webhook/receiver.js';
import type { RelayGap, RelayOrigin } from '../webhook/relay/types.js';
import { JsonText } from './output.js';
import { renderTable, type TableLayout } from './tables.js';
import { inertText as safe } from '../support/outside-text.js';

const LINE_BREAKS = /[\r\n]/g;

/**
 * What `webhook listen --json` prints for each delivery, one line each: its record, then the payload
 * exactly as it was sent (numbers beyond a double's precision, key order and all), on one line.
 * Any depth prints: the payload is never parsed and serialized again for it.
 */
export function deliveryJson(delivery: ReceivedDelivery): JsonText {
  const record = JSON.stringify(deliveryRecord(delivery));
  // Valid JSON holds line breaks only as whitespace between tokens (in strings they are escaped):
  // as spaces, the payload keeps its meaning on one line.
  const payload = delivery.payloadText().replace(LINE_BREAKS, ' ');
  return new JsonText(`${record.slice(0, -1)},"payload":${payload}}`);
}

function deliveryRecord(delivery: ReceivedDelivery) {
  return {
    received_at: delivery.receivedAt,
    event: delivery.event,
    action: delivery.action ?? null,
    delivery: delivery.id,
    hook_id: delivery.hookId ?? null,
    repository: delivery.repository ?? null,
    content_type: delivery.contentType,
    verified: delivery.verification.verified,
    signature: delivery.verification.verified
      ? { algorithm: delivery.verification.algorithm, legacy: delivery.verification.legacy, secret: delivery.verification.secret }
      : null,
    verdict: verdictOf(delivery),
    relay: delivery.relay ? relayRecord(delivery.relay) : null,
    duplicate: delivery.duplicate,
    warnings: delivery.warnings,
    headers: delivery.headers,
  };
}

function relayRecord(relay: RelayOrigin) {
  return { channel: relay.channel, relayed_at: relay.relayedAt ?? null, body: relay.body, form_converted: relay.formConverted };
}

/** One word for how far a delivery can be trusted, a relayed one's re-encoding included. */
function verdictOf({ verification }: ReceivedDelivery): 'verified' | 'verified-re-encoded' | 'unverifiable' | 'unverified' {
  if (verification.relayed === 'matched') return 'verified-re-encoded';
  if (verification.relayed === 'unverifiable') return 'unverifiable';
  return verification.verified ? 'verified' : 'unverified';
}

/** The human line of a delivery: everything in it that came from the sender is made inert first. */
export function deliveryLine(delivery: ReceivedDelivery, theme: ChalkInstance, secretCount: number): string {
  const time = delivery.receivedAt.slice(11, 19);
  const what = delivery.ping
    ? `${theme.bold('ping')} (webhook ${safe(delivery.hookId ?? '?')} created)`
    : `${theme.bold(safe(delivery.event))}${delivery.action ? `.${safe(delivery.action)}` : ''}`;
  const { verification } = delivery;
  const matched = verification.relayed === 'matched' ? ' (re-encoded body matched)' : '';
  const trust = verification.verified
    ? theme.green(`verified ${verification.algorithm}${secretCount > 1 ? ` (secret #${verification.secret})` : ''}${matched}`)
    : theme.yellow(verification.relayed === 'unverifiable' ? 'unverifiable: the relay re-encoded the body' : 'unverified');
  const parts = [time, what, safe(delivery.repository ?? '-'), safe(delivery.id), trust];
  if (delivery.duplicate) parts.push(theme.yellow('duplicate (redelivery)'));
  if (delivery.warnings.length > 0) parts.push(theme.yellow(`warnings: ${safe(delivery.warnings.join('; '))}`));
  if (delivery.relay) parts.push('via relay');
  return parts.join('  ');
}

/** `listen --json`'s line for a forward attempt's record, beside the deliveries' lines. */
export function forwardJson(record: ForwardRecord): { forward: ForwardRecord } {
  return { forward: record };
}

/**
 * The human line of a forward's record, after `  → <target> `: a 2xx with its time, a failure with
 * the delivery it was for, what the target said or why it did not, and what happens next.
 */
export function forwardLine(record: ForwardRecord, theme: ChalkInstance): string {
  const said = record.response ? safe(record.response.replace(/\s+/g, ' ').trim()) : '';
  const answer = record.status === null ? '' : `${record.status} in ${record.ms} ms`;
  const of = record.attempt !== null && record.max_attempts > 1 ? `attempt ${record.attempt} of ${record.max_attempts}` : '';
  const head = `  → ${safe(record.target)}`;
  if (record.outcome === 'delivered') {
    return `${head} ${theme.green(answer)} for ${safe(record.delivery)}${record.attempt !== null && record.attempt > 1 ? ` (${of})` : ''}${said ? `: ${said}` : ''}`;
  }
  if (record.outcome === 'not_forwarded') return `  → ${theme.red('not forwarded')} (queue full): ${safe(record.delivery)}`;
  // Failed with attempts left: Ctrl-C stopped the retries.
  const last = record.attempt !== null && record.attempt < record.max_attempts ? 'not tried again after Ctrl-C' : 'gave up';
  const next = record.outcome === 'retrying' ? `retrying in ${seconds(record.retry_in_ms ?? 0)}` : record.max_attempts > 1 ? last : '';
  const notes = [of, next].filter(Boolean).join('; ');
  if (record.attempt === null) return `${head} ${theme.red('failed')} for ${safe(record.delivery)}: ${safe(record.error ?? '')}`;
  // A timeout says "no answer within …" itself.
  const silence = safe(record.error ?? '');
  const why = record.status === null ? (silence.startsWith('no answer') ? silence : `no answer: ${silence}`) : `${theme.red(answer)}${said ? `: ${said}` : ''}`;
  return `${head} ${theme.red('failed')} for ${safe(record.delivery)}${notes ? ` (${notes})` : ''}: ${why}`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** `listen --json`'s line for a relay gap, when it opens (`to` null) and when it closes. */
export function relayGapJson({ channel, from, to, reason, failedTries }: RelayGap) {
  return { gap: { channel, from, to, reason, failed_tries: failedTries } };
}

/** What the user is told of a relay gap: deliveries sent meanwhile are lost, and what to do about them. */
export function relayGapLine(gap: RelayGap, retryInMs: number | undefined): string {
  if (gap.to === null) {
    const next = retryInMs === undefined ? '' : `; reconnecting in ${seconds(retryInMs)}`;
    if (gap.failedTries > 0) return `relay still lost since ${gap.from.slice(11, 19)} (try ${gap.failedTries} failed: ${safe(gap.reason)})${next}`;
    return `relay lost at ${gap.from.slice(11, 19)} (${safe(gap.reason)}): deliveries sent to the channel until it is read again are lost${next}`;
  }
  const lasted = Math.max(0, Math.round((Date.parse(gap.to) - Date.parse(gap.from)) / 1000));
  return `relay read again at ${gap.to.slice(11, 19)}: a gap of ${lasted} s in which deliveries were lost; redeliver them from the webhook's settings`;
}

export function rejectionLine(rejection: Rejection): string {
  const what = rejection.event ? ` ${rejection.event}` : '';
  const id = rejection.id ? ` ${rejection.id}` : '';
  return safe(`rejected ${rejection.status} ${rejection.method} ${rejection.path}${what}${id}: ${rejection.reason}`);
}

export function eventsTable(specs: EventSpec[], theme: ChalkInstance, layout?: TableLayout): string {
  return renderTable(
    ['EVENT', 'PERMISSION', 'AVAILABILITY', 'ACTION', 'REQUIRED'],
    specs.map((spec) => [
      `${spec.name}${spec.beta ? ' (beta)' : ''}${spec.deprecated ? ' (deprecated)' : ''}`,
      spec.permission,
      spec.availability.join(' '),
      spec.action,
      spec.required.join(', '),
    ]),
    theme,
    layout,
    // On a narrow terminal the action (required or optional) stays whole and the event's name is
    // cut before it; the other columns give way first.
    [{ rank: 1 }, {}, {}, { rank: 2 }, {}],
  );
}
