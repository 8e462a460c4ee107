import type { Writable } from 'node:stream';
import { Chalk, type ChalkInstance } from 'chalk';
import { CliError, ExitCode, UsageError, ValidationError } from '../errors.js';
import { createSpinner, drawable, ProgressBar, type Spinner } from './decorations.js';
import type { TableLayout } from './tables.js';
import { inertJson, inertText } from '../support/outside-text.js';

export interface Stream extends Pick<Writable, 'write'> {
  /** Bytes written and waiting for the reader (a pipe's reader that stopped reading leaves them here). */
  writableLength?: number;
  isTTY?: boolean;
  /** A terminal's width; 0 or missing on some pseudo-terminals (`script`, `docker exec -t`). */
  columns?: number;
}

export interface OutputOptions {
  json: boolean;
  quiet: boolean;
  /** undefined: colour when stderr is a TTY. */
  color: boolean | undefined;
  stdout: Stream;
  stderr: Stream;
  /** `--json id,state`: the fields of each object to print, in this order (as gh's `--json`). */
  fields?: string[] | undefined;
}

/** Characters of lines `together` joins into one write, at most. */
const JOINED_AT_MOST = 1024 * 1024;

/** Bytes waiting in stdout or stderr beyond which the output is behind (`behind`). */
const UNREAD_AT_MOST = 16 * 1024 * 1024;

/**
 * What is drawn in place at the foot of stderr (a progress bar, the org export's board): cleared
 * before any message, so the message never lands inside it, and drawn again after it, if it can.
 */
export interface LiveArea {
  clear(): void;
  redraw?(): void;
}

/** JSON text built elsewhere, printed as it is: one line of valid JSON (a payload spliced in as sent). */
export class JsonText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** What scripts read: JSON, in which nothing from outside can drive a terminal it is shown on. */
function jsonText(value: unknown, indent?: number): string {
  return inertJson(value instanceof JsonText ? value.text : JSON.stringify(value, null, indent));
}

/**
 * For a command whose `--json` may name fields (`list`, `status`, `repos`): a usage error, before
 * anything is asked of the service, for a field its objects do not have.
 */
export function checkFields(fields: readonly string[] | undefined, valid: readonly string[], what: string): void {
  const unknown = fields?.filter((field) => !valid.includes(field)) ?? [];
  if (unknown.length === 0) return;
  // The valid fields are in the message, which --json prints too (its error has no hint).
  const named = unknown.map((field) => `"${field}"`).join(', ');
  throw new UsageError(`unknown --json field${unknown.length === 1 ? '' : 's'} ${named}; the fields of ${what} are: ${valid.join(', ')}`, {
    hint: 'name fields from that list, comma-separated (--json id,state), or give --json alone for every field',
  });
}

/**
 * The one place that decides how results, messages and errors reach a human or a script, so no
 * command branches on `--json`. stdout carries results only; everything else goes to stderr.
 */
export class Output {
  readonly json: boolean;
  readonly quiet: boolean;
  /** Spinners, progress bars and colour belong to a human at a terminal. */
  readonly decorated: boolean;
  readonly theme: ChalkInstance;
  private readonly fields: string[] | undefined;
  private stdout: Stream;
  private readonly stderr: Stream;
  /** stdout itself, while `together` stands in for it. */
  private readonly results: Stream;
  /** Progress bars and boards drawn on stderr: a message clears them first, so it never runs on after them or into them. */
  private readonly live = new Set<LiveArea>();

  constructor(options: OutputOptions) {
    this.json = options.json;
    this.fields = options.fields;
    this.quiet = options.quiet;
    this.stdout = options.stdout;
    this.stderr = options.stderr;
    this.results = options.stdout;
    const colorful = options.color ?? Boolean(options.stderr.isTTY);
    this.theme = new Chalk({ level: colorful ? 1 : 0 });
    this.decorated = drawable(options.stderr) && !options.json && !options.quiet;
  }

  /** How tables print: plain tab-separated lines off a terminal, fitted to its width on one. */
  get layout(): TableLayout {
    return { plain: !this.stdout.isTTY, width: drawable(this.stdout) ? this.stdout.columns : undefined };
  }

  /** Each object (or the one) cut to the fields asked for; a field it lacks is null. */
  private selected(data: unknown): unknown {
    const fields = this.fields;
    if (!fields || data instanceof JsonText) return data;
    const pick = (item: unknown) =>
      typeof item === 'object' && item !== null
        ? Object.fromEntries(fields.map((field) => [field, (item as Record<string, unknown>)[field] ?? null]))
        : item;
    return Array.isArray(data) ? data.map(pick) : pick(data);
  }

  /** A command's result: the object unchanged as JSON (or the fields asked for), or its human rendering. */
  result<T>(data: T, human: (data: T) => string): void {
    if (this.json) {
      this.stdout.write(`${jsonText(this.selected(data), 2)}\n`);
      return;
    }
    const text = human(data);
    if (text) this.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /**
   * One item of a list that `result` gives whole at the end: its line for a human as soon as it is
   * known (a long run shows its progress); nothing with --json, whose list stays one document.
   */
  item<T>(data: T, human: (data: T) => string): void {
    if (!this.json) this.stdout.write(`${human(data)}\n`);
  }

  /** One record of a stream of results (deliveries, a server's address): NDJSON line or its rendering. */
  line<T>(data: T, human: (data: T) => string): void {
    this.stdout.write(this.json ? `${jsonText(data)}\n` : `${human(data)}\n`);
  }

  /** As `line`, for a record dear to build (a delivery's payload): `json` runs only with --json. */
  lineOf(json: () => unknown, human: () => string): void {
    this.stdout.write(this.json ? `${jsonText(json())}\n` : `${human()}\n`);
  }

  /**
   * A record for scripts beside a stream's lines (a forward's result among the deliveries): an
   * NDJSON line with --json; nothing otherwise, where a human reads its message on stderr.
   */
  jsonLine(data: unknown): void {
    if (this.json) this.stdout.write(`${jsonText(data)}\n`);
  }

  /**
   * Runs `print` and writes what it sent to stdout at once: a server's burst of lines costs one
   * write. Lines are joined only up to a size: a burst of large ones, joined, could pass the
   * longest string JavaScript can make, and the lines after it would be lost.
   */
  together(print: () => void): void {
    const target = this.stdout;
    let held = '';
    this.stdout = {
      write: (text: string) => {
        if (held.length + text.length > JOINED_AT_MOST) {
          if (held) target.write(held);
          held = '';
          return target.write(text);
        }
        held += text;
        return true;
      },
    };
    try {
      print();
    } finally {
      this.stdout = target;
      if (held) target.write(held);
    }
  }

  /**
   * Whether what was written waits for a reader that is not reading (`listen --json | slow`), on
   * stdout or stderr, or on the one named: a server then takes on no more work whose lines would
   * pile up in memory.
   */
  behind(only?: 'stderr'): boolean {
    const unread = (stream: Stream) => (stream.writableLength ?? 0) > UNREAD_AT_MOST;
    return unread(this.stderr) || (only === undefined && unread(this.results));
  }

  /** A line of stderr, on a line of its own: what is drawn in place there is cleared first, and drawn again below it. */
  private say(text: string): void {
    for (const area of this.live) area.clear();
    this.stderr.write(text);
    for (const area of this.live) area.redraw?.();
  }

  /** Keeps messages out of `area` (drawn in place on stderr) until the function returned is called. */
  attachLive(area: LiveArea): () => void {
    this.live.add(area);
    return () => this.live.delete(area);
  }

  info(message: string): void {
    if (!this.quiet) this.say(`${message}\n`);
  }

  /** A message a script needs even with --quiet (where a server listens). */
  essential(message: string): void {
    this.say(`${message}\n`);
  }

  success(message: string): void {
    if (!this.quiet) this.say(`${this.theme.green('✓')} ${message}\n`);
  }

  warn(message: string): void {
    this.say(`${this.theme.yellow('warning:')} ${message}\n`);
  }

  /** A spinner on a terminal, with messages written above it; silent otherwise. */
  async spinner(text: string): Promise<Spinner> {
    const spinner = await createSpinner(this.decorated, this.stderr as Writable, text);
    const detach = this.attachLive(spinner);
    const ending = (end: (final: string) => void) => (final: string) => {
      detach();
      end(final);
    };
    return {
      ...spinner,
      succeed: ending((final) => spinner.succeed(final)),
      fail: ending((final) => spinner.fail(final)),
      stop: () => {
        detach();
        spinner.stop();
      },
    };
  }

  /** A download progress line on a terminal; silent otherwise. */
  progress(): ProgressBar {
    const bar = new ProgressBar(this.decorated, this.stderr as Writable);
    bar.onDone = this.attachLive(bar);
    return bar;
  }

  /** `--debug` trace lines; callers only call it when tracing is on. A server's headers are in them: each line is shown inert. */
  trace(message: string): void {
    this.say(`${this.theme.dim(message.split('\n').map(inertText).join('\n'))}\n`);
  }

  /** An error as docs/cli.md prescribes: one line (and a hint) for humans, one JSON object for scripts. */
  error(error: unknown, options: { debug: boolean }): void {
    const known = error instanceof CliError;
    // A message may quote a server (an API error's text): nothing in it may drive the terminal. As
    // JSON its control characters are escaped (jsonText), so a script reads the value as it came.
    const raw = known ? error.message : `unexpected error: ${(error as Error)?.message ?? String(error)}`;
    const message = this.json ? raw : inertText(raw);
    // An error with nothing to say (Ctrl-C at a prompt) ends quietly for a human.
    if (known && !message && !this.json) return;
    for (const area of this.live) area.clear();
    if (this.json) {
      const code = known ? error.exitCode : ExitCode.Unexpected;
      const status = known ? (error.status ?? null) : null;
      // A 422's line names a few of what it refused; a script gets every one.
      const refused =
        error instanceof ValidationError
          ? { details: error.messages, ...(error.repositories.length > 0 ? { repositories: error.repositories } : {}) }
          : {};
      this.stderr.write(`${jsonText({ error: { code, status, message: message || 'interrupted', ...refused } })}\n`);
    } else {
      this.stderr.write(`${this.theme.red('error:')} ${message}\n`);
      if (known && error.hint) this.stderr.write(`${this.theme.dim('hint:')} ${inertText(error.hint)}\n`);
      if (!known)
        this.stderr.write('hint: this is a bug in svc-migrate; please report it with the output of --debug\n');
    }
    if (options.debug && !known && error instanceof Error && error.stack) {
      this.stderr.write(`${error.stack}\n`);
    }
  }
}
