import type { Command } from 'commander';
import type { Runner } from '../../context.js';
import { register as registerEvents } from './events.js';
import { register as registerInspect } from './inspect.js';
import { register as registerListen } from './listen.js';
import { register as registerRelay } from './relay.js';
import { register as registerReplay } from './replay.js';
import { register as registerSend } from './send.js';
import { register as registerVerify } from './verify.js';
import { examples } from '../common/options.js';

export function register(program: Command, run: Runner): void {
  const webhook = program
    .command('webhook')
    .description('receive, send, replay, inspect and verify webhook deliveries locally')
    .addHelpText(
      'after',
      examples([
        'svc-migrate webhook listen --secret "$SECRET" --save deliveries/ --forward-to 3000/webhooks',
        'svc-migrate webhook replay deliveries/ --url http://127.0.0.1:3000/webhooks',
        'svc-migrate webhook inspect deliveries/',
        'svc-migrate webhook events',
      ]),
    );
  const commands = [registerListen, registerSend, registerReplay, registerInspect, registerVerify, registerEvents, registerRelay];
  for (const register of commands) register(webhook, run);
}
