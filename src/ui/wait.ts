import type { WaitEvent } from '../core/wait.js';
import { inertText } from '../support/outside-text.js';
import { formatClockTime, formatDuration, formatState } from './format.js';
import type { Output } from './output.js';

export interface WaitReporter {
  onEvent(event: WaitEvent): void;
  onNotice(message: string): void;
  stop(): void;
}

/**
 * How a wait looks: on a terminal, a spinner with each migration's state, the elapsed time and the
 * last transition; elsewhere, one line per state change.
 */
export async function createWaitReporter(out: Output, ids: number[]): Promise<WaitReporter> {
  const states = new Map<number, string>(ids.map((id) => [id, 'unknown']));
  const started = Date.now();
  let last = '';
  const describe = () =>
    [...states].map(([id, state]) => `migration ${id} ${formatState(state, out.theme)}`).join(', ');
  const spinner = await out.spinner(ids.length > 0 ? `waiting for ${describe()}` : 'starting the export');
  const timer = out.decorated
    ? setInterval(() => spinner.text(`${describe()} · ${formatDuration(Date.now() - started)}${last}`), 1000)
    : undefined;
  timer?.unref();

  return {
    onEvent(event) {
      states.set(event.id, event.state);
      const elapsed = formatDuration(event.elapsedMs);
      // States are the service's words: shown inert, whatever it sends.
      const transition = inertText(event.previous ? `${event.previous} → ${event.state}` : event.state);
      last = ` · last: ${event.id} ${transition} at ${formatClockTime(Date.now())}`;
      if (!out.decorated) {
        out.info(`migration ${event.id}: ${transition} (${elapsed})`);
        return;
      }
      if (event.finished && states.size === 1) {
        if (event.state === 'exported') spinner.succeed(`migration ${event.id} exported after ${elapsed}`);
        else spinner.fail(`migration ${event.id} failed after ${elapsed}`);
        return;
      }
      if (event.finished) out.info(`migration ${event.id} ${inertText(event.state)} after ${elapsed}`);
      spinner.text(`${describe()} · ${elapsed}${last}`);
    },
    onNotice(message) {
      // A failed check quotes the service's error.
      out.warn(inertText(message));
    },
    stop() {
      if (timer) clearInterval(timer);
      spinner.stop();
    },
  };
}
