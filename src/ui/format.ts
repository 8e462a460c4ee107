import type { ChalkInstance } from 'chalk';
import { inertText } from '../support/outside-text.js';

/** `2026-03-10T12:00:00+02:00` → `2026-03-10 10:00Z`: short, sortable, unambiguous. */
export function formatTime(iso: string | undefined): string {
  if (!iso) return '';
  const date = new Date(iso);
  // Not a time: the service's text, shown inert.
  if (Number.isNaN(date.getTime())) return inertText(iso);
  return `${date.toISOString().slice(0, 16).replace('T', ' ')}Z`;
}

/** `2026-03-10 10:00Z` → `2026-03-10`: a date where its time does not fit. */
export function dayOf(time: string): string {
  return /^\d{4}-\d{2}-\d{2}/.test(time) ? time.slice(0, 10) : time;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `2026-03-10 10:00Z` → `Mar 10`: a date where not even its year fits. */
export function monthDayOf(time: string): string {
  const match = /^\d{4}-(\d{2})-(\d{2})/.exec(time);
  const month = MONTHS[Number(match?.[1]) - 1];
  return match && month ? `${month} ${Number(match[2])}` : time;
}

/** A moment of a live line, in UTC as every time the tool prints: `11:23:05Z`. */
export function formatClockTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 19)}Z`;
}

/** A migration's state as the service said it: one it does not document is shown inert, never obeyed. */
export function formatState(state: string, theme: ChalkInstance): string {
  switch (state) {
    case 'exported':
      return theme.green(state);
    case 'failed':
      return theme.red(state);
    case 'exporting':
      return theme.cyan(state);
    default:
      return theme.yellow(inertText(state));
  }
}

export { formatBytes } from '../support/byte-size.js';

/** `95000` → `1m35s`; `4000` → `4s`. */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  if (hours > 0) return `${hours}h${String(minutes).padStart(2, '0')}m`;
  if (minutes > 0) return `${minutes}m${String(seconds).padStart(2, '0')}s`;
  return `${seconds}s`;
}

export { counted } from '../support/counted.js';
