import type { Readable } from 'node:stream';
import type { Stream } from './ui/output.js';

/** The process as the program sees it, so tests can run it in-process with captured streams. */
export interface Io {
  stdin: Readable & { isTTY?: boolean };
  stdout: Stream;
  stderr: Stream;
  env: Record<string, string | undefined>;
}
