import { Argument, type Command, Option } from 'commander';
import type { Context, Runner } from '../../context.js';
import { UsageError } from '../../errors.js';
import { eventDetailText } from '../../ui/event-detail.js';
import { JsonText } from '../../ui/output.js';
import { inertJson } from '../../support/outside-text.js';
import { eventsTable } from '../../ui/webhook.js';
import { CATALOGUE, type EventSpec } from '../../webhook/catalogue.js';
import { type EventDetail, eventDetail, exampleAction } from '../../webhook/event-detail.js';
import { defaultPayload } from '../../webhook/send.js';
import { eventNames, suggest } from '../common/completion-values.js';
import { examples } from '../common/options.js';

interface EventsFlags {
  /** `--example` alone is `true`. */
  example?: string | true;
}

/** The whole catalogue, one event, or the payload `send` posts for one (and an action of it). */
type EventsOptions = { show: 'catalogue' } | { show: 'event'; detail: EventDetail } | { show: 'example'; detail: EventDetail; action?: string };

function parseEventsOptions(name: string | undefined, flags: EventsFlags): EventsOptions {
  if (name === undefined) {
    if (flags.example !== undefined) {
      // `events --example issues`: the event was taken for --example's action.
      const meant = typeof flags.example === 'string' && CATALOGUE.has(flags.example) ? flags.example : undefined;
      throw new UsageError(`--example needs an event${meant ? `, and "${meant}" was read as its action` : ''}`, {
        hint: `name the event first: svc-migrate webhook events ${meant ?? 'issues'} --example${meant ? '' : ' closed'}`,
      });
    }
    return { show: 'catalogue' };
  }
  const detail = eventDetail(name);
  if (flags.example === undefined) return { show: 'event', detail };
  const action = exampleAction(detail, flags.example === true ? undefined : flags.example);
  return { show: 'example', detail, ...(action === undefined ? {} : { action }) };
}

/** The event catalogue of docs/service.md#event-catalogue. */
function catalogue(context: Context): EventSpec[] {
  const specs = [...CATALOGUE.values()].sort((a, b) => a.name.localeCompare(b.name));
  context.out.result(specs, (list) => eventsTable(list, context.out.theme, context.out.layout));
  return specs;
}

/**
 * `--example`: the payload `webhook send` posts for the event and action by default (the same
 * function makes both), as the JSON text it posts; indented on a terminal, for a human to read.
 */
function example(context: Context, name: string, action: string | undefined): void {
  const { payload, adapted } = defaultPayload(name, action);
  if (adapted) context.out.info(`note: ${adapted}`);
  else if (action === undefined && typeof payload.action === 'string') {
    context.out.info(`note: the payload of action "${payload.action}", which \`webhook send --event ${name}\` sends without --action`);
  }
  const text = new JsonText(context.out.layout.plain ? JSON.stringify(payload) : JSON.stringify(payload, null, 2));
  // Published payloads hold text from outside: nothing in it may drive a terminal.
  context.out.result(text, (json) => inertJson(json.text));
}

export function register(webhook: Command, run: Runner): void {
  webhook
    .command('events')
    .description('the event catalogue, or one event: its actions, what each requires and on whose word')
    .addArgument(suggest(new Argument('[event]', 'an event of the catalogue: show it alone, with its actions'), eventNames))
    .addOption(new Option('--example [action]', 'print the payload `webhook send` sends for the event (and action)'))
    .addHelpText(
      'after',
      examples([
        'svc-migrate webhook events',
        'svc-migrate webhook events --json | jq -r \'.[].name\'',
        'svc-migrate webhook events issues',
        'svc-migrate webhook events issues --example closed | jq .issue.state',
      ]),
    )
    .action((name: string | undefined, flags: EventsFlags, command: Command) =>
      run(
        command,
        () => parseEventsOptions(name, flags),
        async (context, options) => {
          if (options.show === 'catalogue') catalogue(context);
          else if (options.show === 'example') example(context, options.detail.name, options.action);
          else context.out.result(options.detail, (shown) => eventDetailText(shown, context.out.theme, context.out.layout));
        },
      ),
    );
}
