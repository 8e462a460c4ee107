import { isUtf8 } from 'node:buffer';
import { formatBytes } from '../../support/byte-size.js';
import { type ContentKind, contentKind, payloadText } from '../delivery.js';
import type { RelayGap } from '../relay/types.js';
import { type DeliveryLog, type DeliverySummary, type InspectedDelivery, summaryOf } from './log.js';
import { headerValue } from './observer.js';

// The inspector's page as the server renders it: the list as it stands, which web/inspector.js then
// keeps live. Everything from a delivery is escaped here, and drawn as text by the script: none of it
// is ever markup. web/inspector.js draws a row exactly as `row` does (the browser test compares them).
// No framework and no build step: the page is a list, one detail view and a tree, which the DOM's
// createElement, textContent and <details> draw; a framework would add a build and a dependency to
// audit for nothing the page needs.

/** What the page says about where its deliveries come from; nothing secret (no secret, no credential). */
export interface PageSource {
  mode: 'listen' | 'saved';
  /** `listen`: the receiver's URL; `saved`: the directory. */
  where: string;
  /** Where `listen` forwards to, credentials redacted. */
  forwardTarget?: string | undefined;
  /** Where `listen --save` saves. */
  saveDir?: string | undefined;
  /** How many secrets replay can sign with (#1…); never the secrets. */
  secrets: number;
  /** `saved`: files that are not saved deliveries. */
  unreadable?: { name: string; reason: string }[];
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\'': '&#39;' };

/** Text for HTML, as content or as a quoted attribute value. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => ESCAPES[character] as string);
}

/**
 * Controls drawn as their pictures (␀…␟, ␡), and C1 controls and bidirectional overrides as U+FFFD:
 * a value shows what it holds, on one line, in its own order. web/inspector.js has the same `visible`.
 */
function visible(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, (character) => {
    const code = character.charCodeAt(0);
    if (code < 0x20) return String.fromCharCode(0x2400 + code);
    return code === 0x7f ? '\u2421' : '\ufffd';
  });
}

/** Characters of a value shown in a list cell; the detail shows all of it. */
const CELL_CHARS = 200;

function cell(text: string): string {
  const shown = text.length > CELL_CHARS ? `${text.slice(0, CELL_CHARS)}…` : text;
  return escapeHtml(visible(shown));
}

export function renderPage(log: DeliveryLog, source: PageSource, token: string): string {
  const records = log.list();
  const last = records.at(-1)?.n ?? 0;
  const query = `?token=${encodeURIComponent(token)}`;
  const data = [
    ['mode', source.mode],
    ['where', source.where],
    ['forward', source.forwardTarget ?? ''],
    ['save', source.saveDir ?? ''],
    ['secrets', String(source.secrets)],
    ['keep', String(log.keep)],
    ['last', String(last)],
    ['dropped', String(log.dropped)],
    ['oldest', String(log.oldest())],
  ]
    .map(([name, value]) => ` data-${name}="${escapeHtml(value as string)}"`)
    .join('');
  const rows = records
    .reverse()
    .map((record) => row(listEntry(record)))
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Deliveries · svc-migrate</title>
<link rel="icon" href="/static/icon.svg${query}">
<link rel="stylesheet" href="/static/inspector.css${query}">
<script src="/static/inspector.js${query}" defer></script>
</head>
<body${data}>
<header class="top">
<h1>Deliveries</h1>
<p class="source">${sourceLine(source)}</p>
<p class="status" id="status" role="status">${source.mode === 'listen' ? 'connecting…' : 'saved deliveries'}</p>
</header>
<p class="notice" id="dropped"${log.dropped > 0 ? '' : ' hidden'}>${escapeHtml(droppedText(log, source))}</p>
${unreadableNotice(source)}<form class="filters" id="filters">
<label>Event <select id="filter-event"><option value="">all</option></select></label>
<label>Action <select id="filter-action"><option value="">all</option></select></label>
<label>Outcome <select id="filter-outcome">
<option value="">all</option>
<option value="verified">verified</option>
<option value="unverified">unverified</option>
<option value="refused">refused</option>
<option value="warnings">with warnings</option>
<option value="forward-failed">forward not taken</option>
<option value="duplicate">redeliveries</option>
<option value="relayed">via relay</option>
</select></label>
<span class="count" id="count"></span>
${source.forwardTarget ? `<button type="button" id="replay-failed">Replay every failed forward to ${escapeHtml(visible(source.forwardTarget))}</button>
<output id="replay-failed-result" role="status"></output>` : ''}</form>
${gapsNotice(log)}
<main class="panes">
<section class="list">
<table id="list">
<thead><tr><th class="time">Time (UTC)</th><th class="event">Event</th><th class="id">Delivery</th><th class="verification">Verification</th><th class="warnings">Warnings</th><th class="size">Size</th><th class="forward">Forward</th></tr></thead>
<tbody id="rows">
${rows}
</tbody>
</table>
<p class="empty" id="empty"${records.length > 0 ? ' hidden' : ''}>${source.mode === 'listen' ? 'No deliveries yet. Each one appears here as soon as it is answered.' : 'No saved deliveries.'}</p>
</section>
<section class="detail" id="detail" hidden aria-live="polite"></section>
</main>
</body>
</html>
`;
}

function sourceLine(source: PageSource): string {
  if (source.mode === 'saved') return `saved in <code>${escapeHtml(visible(source.where))}</code>`;
  const parts = [`listening on <code>${escapeHtml(source.where)}</code>`];
  if (source.forwardTarget) parts.push(`forwarding to <code>${escapeHtml(visible(source.forwardTarget))}</code>`);
  if (source.saveDir) parts.push(`saving to <code>${escapeHtml(visible(source.saveDir))}</code>`);
  return parts.join(' · ');
}

/** Plain text: the script sets it as text, the page escapes it. */
export function droppedText(log: DeliveryLog, source: PageSource): string {
  const count = `${log.dropped} older deliver${log.dropped === 1 ? 'y' : 'ies'}`;
  if (source.mode === 'saved') return `${count} not listed: the page lists the newest ${log.keep} (--keep).`;
  const rest = source.saveDir ? `they remain in ${visible(source.saveDir)}` : 'they were not saved (--save keeps every delivery)';
  return `${count} dropped from this list, which keeps the last ${log.keep} (--inspect-keep); ${rest}.`;
}

/** A relay gap as the page says it (web/inspector.js says it the same way). */
export function gapText(gap: RelayGap): string {
  const time = (iso: string) => `${iso.slice(11, 19)} UTC`;
  const when = gap.to === null ? `since ${time(gap.from)}` : `from ${time(gap.from)} to ${time(gap.to)}`;
  const then = gap.to === null ? 'reconnecting' : 'redeliver them from the webhook\'s settings';
  return `relay channel ${gap.channel} not read ${when} (${gap.reason}): deliveries sent to it then are lost; ${then}`;
}

function gapsNotice(log: DeliveryLog): string {
  const items = log.gaps.map((gap) => `<li data-key="${escapeHtml(visible(`${gap.channel} ${gap.from}`))}">${escapeHtml(visible(gapText(gap)))}</li>`).join('');
  return `<ul class="notice gaps" id="gaps"${log.gaps.length > 0 ? '' : ' hidden'}>${items}</ul>\n`;
}

/** Files not saved deliveries named in the page: a directory of thousands of them makes no page of thousands of lines. */
const UNREADABLE_NAMED = 20;

function unreadableNotice(source: PageSource): string {
  const unreadable = source.unreadable ?? [];
  if (unreadable.length === 0) return '';
  let items = unreadable
    .slice(0, UNREADABLE_NAMED)
    .map(({ name, reason }) => `<li><code>${cell(name)}</code>: ${cell(reason)}</li>`)
    .join('');
  if (unreadable.length > UNREADABLE_NAMED) items += `<li>and ${unreadable.length - UNREADABLE_NAMED} more</li>`;
  return `<details class="notice" id="unreadable"><summary>${unreadable.length} file${unreadable.length === 1 ? ' is' : 's are'} not saved deliveries</summary><ul>${items}</ul></details>\n`;
}

/**
 * What the list shows of a record: its summary and its row's cells and data, worked out here once.
 * The page's first rows are drawn from it below; later ones by web/inspector.js, which only builds
 * the row's elements from `row`.
 */
export function listEntry(record: InspectedDelivery) {
  const summary = summaryOf(record);
  return { ...summary, row: { cells: rowCells(summary), data: rowData(summary) } };
}

/** A list row as HTML. */
function row({ row: { cells: rowCellsOf, data } }: ReturnType<typeof listEntry>): string {
  const cells = rowCellsOf
    .map(([name, text, title]) => `<td class="${name}"${title ? ` title="${cell(title)}"` : ''}>${cell(text)}</td>`)
    .join('');
  const attributes = Object.entries(data)
    .map(([name, value]) => ` data-${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}="${escapeHtml(visible(value))}"`)
    .join('');
  return `<tr${attributes} tabindex="0">${cells}</tr>`;
}

/** The row's data attributes, which the filters read. */
function rowData(summary: DeliverySummary): Record<string, string> {
  return {
    n: String(summary.n),
    event: summary.event ?? '',
    action: summary.action ?? '',
    outcome: summary.verification.state,
    warnings: String(summary.warnings.length),
    forward: summary.forward?.state ?? '',
    forwardOk: forwardOk(summary.forward),
    duplicate: summary.duplicate ? '1' : '0',
    relayed: summary.relay ? '1' : '0',
  };
}

/** '1' when the target took it (a 2xx), '0' when it has not (failed, retried, not forwarded), '' while it waits or without a forward. */
function forwardOk(forward: DeliverySummary['forward']): string {
  if (forward === null || forward.state === 'pending') return '';
  return forward.state === 'delivered' ? '1' : '0';
}

/** Each cell: its class, its text and its title. */
function rowCells(summary: DeliverySummary): [string, string, string?][] {
  const { verification, forward } = summary;
  const what = summary.event === null ? `${summary.method} ${summary.path}` : `${summary.event}${summary.action === null ? '' : `.${summary.action}`}`;
  let trust: [string, string?];
  const via = summary.relay ? 'via relay · ' : '';
  if (verification.state === 'verified') {
    const how = verification.relayed === 'matched' ? ' (re-encoded body matched)' : verification.legacy ? ' (sha1)' : '';
    trust = [`${via}verified${how} · secret #${verification.secret}`, relayTitle(summary.relay)];
  } else if (verification.state === 'unverified') {
    trust = verification.relayed === 'unverifiable'
      ? [`${via}unverifiable: the relay re-encoded the body`, relayTitle(summary.relay)]
      : [`${via}unverified`, verification.reason ?? relayTitle(summary.relay)];
  } else trust = [`refused ${verification.status}`, verification.reason];
  return [
    ['time', summary.receivedAt.slice(11, 19), summary.receivedAt],
    ['event', what],
    ['id', summary.id ?? '—'],
    ['verification', ...trust],
    ['warnings', summary.warnings.length === 0 ? '' : String(summary.warnings.length), summary.warnings.join('; ')],
    ['size', formatBytes(summary.size)],
    summary.duplicate
      ? ['forward', 'duplicate: not forwarded again', 'a redelivery of a delivery already received: answered, not saved or forwarded again']
      : ['forward', ...forwardText(forward)],
  ];
}

function relayTitle(relay: DeliverySummary['relay']): string | undefined {
  if (relay === null) return undefined;
  const body = relay.body === 'raw' ? 'the bytes the service sent' : 'the relay\'s re-encoding of the body';
  return `read from ${relay.channel}: ${body}${relay.formConverted ? ', a form body the relay turned into JSON, rebuilt as a form' : ''}`;
}

/** The forward cell: the last attempt's answer, and which attempt it was when there may be several. */
function forwardText(forward: DeliverySummary['forward']): [string, string?] {
  if (forward === null) return ['—'];
  const last = forward.history.at(-1);
  const tried = forward.history.filter((attempt) => attempt.attempt !== null).at(-1);
  const answer = tried?.status === null || tried === undefined ? 'no answer' : String(tried.status);
  const of = forward.maxAttempts > 1 ? ` · attempt ${forward.attempts} of ${forward.maxAttempts}` : '';
  const said = last?.error ?? tried?.preview ?? undefined;
  switch (forward.state) {
    case 'pending':
      return ['…'];
    case 'delivered':
      // A saved delivery's forward, as the journal says it, has no time taken.
      return [`${answer}${tried?.ms == null ? '' : ` · ${tried.ms} ms`}${of}`, said];
    case 'retrying':
      return [`${answer}, retrying${of}`, said];
    case 'failed':
      return [`failed · ${answer}${of}`, said];
    case 'not_forwarded':
      return ['not forwarded', said];
  }
}

/** A record's detail, for the page's detail view. */
export async function detailOf(record: InspectedDelivery): Promise<Record<string, unknown>> {
  const { rawHeaders, body } = await record.load();
  const headers: [string, string][] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) headers.push([rawHeaders[i] as string, rawHeaders[i + 1] as string]);
  const kind = record.contentType ?? contentKind(headerValue(rawHeaders, 'content-type'));
  return { ...summaryOf(record), headers, answer: record.answer?.() ?? null, ...bodyOf(kind, body) };
}

/** Characters of the raw body shown in the page; the whole of it is a download away. */
const BODY_SHOWN = 1024 * 1024;

function bodyOf(kind: ContentKind | undefined, body: Buffer | undefined) {
  if (body === undefined) return { body: null, payload: null, payloadError: 'the body was not read: the request was refused before it' };
  const utf8 = isUtf8(body);
  const text = body.subarray(0, BODY_SHOWN * 4).toString(utf8 ? 'utf8' : 'latin1');
  const shown = text.length > BODY_SHOWN ? text.slice(0, BODY_SHOWN) : text;
  let payload: string | null = null;
  let payloadError: string | null = null;
  if (kind === undefined) payloadError = 'neither JSON nor a form body';
  else {
    try {
      payload = payloadText(body, kind);
    } catch (error) {
      payloadError = (error as Error).message;
    }
  }
  return {
    body: { text: shown, bytes: body.length, truncated: shown.length < text.length || body.length > BODY_SHOWN * 4, utf8 },
    payload,
    payloadError,
  };
}
