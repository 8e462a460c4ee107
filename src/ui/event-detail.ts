import type { ChalkInstance } from 'chalk';
import type { ActionDetail, EventDetail } from '../webhook/event-detail.js';
import type { TableLayout } from './tables.js';

/** docs/service.md#event-catalogue: where an event is available. */
const AVAILABILITY: Record<string, string> = {
  Rep: 'repository',
  Org: 'organization',
  App: 'app',
  Ent: 'enterprise',
  Mkt: 'marketplace',
  Spn: 'sponsored-account',
};

const LABEL = 15;
const ACTION_INDENT = 2;

/**
 * `webhook events NAME` for a human: the row, then each action with its required properties
 * grouped by whose word they are. On a terminal every line fits its width (values wrap under
 * their column); off one, each action stays on one line, for grep.
 */
export function eventDetailText(detail: EventDetail, theme: ChalkInstance, layout: TableLayout): string {
  const width = layout.plain ? undefined : layout.width;
  const described = detail.described_action === null ? '' : ` (action ${detail.described_action})`;
  const rows: [string, string][] = [
    ['activity', `${detail.activity}${described}`],
    ['permission', detail.permission],
    ['availability', `${detail.availability.join(' ')}: ${listed(detail.availability.map((code) => AVAILABILITY[code] ?? code))} webhooks`],
    ['status', detail.deprecated ? 'deprecated (docs/service.md#delivery-rules 10)' : detail.beta ? 'beta, may change (docs/service.md#delivery-rules 9)' : 'stable'],
    ['action', actionLine(detail)],
  ];
  const [only] = detail.actions;
  const actionless = only !== undefined && only.action === null;
  if (actionless) rows.push(['required', sources(only)]);
  rows.push(['optional', [...detail.optional].sort().join(', ') || 'none']);
  if (detail.absent.length > 0) rows.push(['never carried', detail.absent.join(', ')]);
  const lines = [...field('', detail.name, width).map((line) => theme.bold(line)), ...rows.flatMap(([label, value]) => field(`  ${label.padEnd(LABEL)}`, value, width))];
  if (actionless) return lines.join('\n');
  lines.push('', ...field('', 'required properties by action (spec: the catalogue\'s row; schema: the published schema):', width));
  const column = Math.max(...detail.actions.map((entry) => (entry.action ?? '').length)) + 2;
  for (const entry of detail.actions) {
    const name = `${' '.repeat(ACTION_INDENT)}${(entry.action ?? '').padEnd(column)}`;
    lines.push(...field(name, sources(entry), width));
  }
  return lines.join('\n');
}

function actionLine(detail: EventDetail): string {
  if (detail.action === 'none') return 'none: payloads carry no action';
  const count = detail.actions.length;
  const known = `${count} ${count === 1 ? 'action' : 'actions'} in the published schemas`;
  return detail.any_action ? `${detail.action}, any name: the dispatcher's event_type (${known})` : `${detail.action}; ${known}`;
}

/** `spec: action, repository, sender; schema: issue`: the required properties by whose word they are. */
function sources(entry: ActionDetail): string {
  const parts = (['spec', 'published'] as const).flatMap((source) => {
    const properties = entry.required.filter((requirement) => requirement.source === source).map((requirement) => requirement.property);
    return properties.length === 0 ? [] : [`${source === 'spec' ? 'spec' : 'schema'}: ${properties.join(', ')}`];
  });
  return parts.join('; ') || 'nothing';
}

/** `a`, `a and b`, `a, b and c`. */
function listed(words: string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

/** Room a value keeps beside its head; narrower, the head gets a line of its own. */
const ROOM = 12;

/**
 * `head` then `value`, on lines no wider than `width`: the value wraps at spaces under its first
 * character (under a shorter indent when the terminal is too narrow for `head` beside it), and a
 * word wider than the room is cut into pieces.
 */
function field(head: string, value: string, width: number | undefined): string[] {
  if (width === undefined || head.length + value.length <= width) return [`${head}${value}`];
  const lines: string[] = [];
  let indent = head.length;
  let line = head;
  if (head !== '' && head.length + ROOM > width) {
    lines.push(...field('', head.trim(), width));
    indent = Math.min(4, width - 1);
    line = ' '.repeat(indent);
  }
  const fresh = ' '.repeat(indent);
  let empty = true;
  // A label (`schema:`) stays with what follows it.
  for (const word of value.split(/(?<=[^:]) /)) {
    if (!empty && line.length + 1 + word.length > width) {
      lines.push(line);
      line = fresh;
      empty = true;
    }
    let rest = empty ? word : ` ${word}`;
    while (line.length + rest.length > width) {
      const room = width - line.length;
      lines.push(line + rest.slice(0, room));
      rest = rest.slice(room);
      line = fresh;
    }
    line += rest;
    empty = false;
  }
  lines.push(line);
  return lines;
}
