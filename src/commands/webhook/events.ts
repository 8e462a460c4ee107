import type { Command } from 'commander';
import type { Context, Runner } from '../../context.js';
import { eventsTable } from '../../ui/webhook.js';
import { CATALOGUE, type EventSpec } from '../../webhook/catalogue.js';
import { examples } from '../common/options.js';

/** The event catalogue of docs/service.md#event-catalogue. */
async function events(context: Context): Promise<EventSpec[]> {
  const specs = [...CATALOGUE.values()].sort((a, b) => a.name.localeCompare(b.name));
  context.out.result(specs, (list) => eventsTable(list, context.out.theme, context.out.layout));
  return specs;
}

export function register(webhook: Command, run: Runner): void {
  webhook
    .command('events')
    .description('the event catalogue: permission, availability, action, required properties')
    .addHelpText('after', examples(['svc-migrate webhook events', 'svc-migrate webhook events --json | jq -r \'.[].name\'']))
    .action((_options: unknown, command: Command) =>
      run(command, async (context) => {
        await events(context);
      }),
    );
}
