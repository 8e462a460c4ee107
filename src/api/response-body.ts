import { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';

/**
 * Where the HTTP client writes a download's body as it parses it. The first chunk waits until the
 * caller has judged the status and hands over a consumer; from then on each chunk goes straight to
 * it, so when the connection is cut, every byte received has already been written.
 */
export class ResponseBody extends Writable {
  private consumer: ((chunk: Buffer) => void | Promise<void>) | undefined;
  private waiting: { chunk: Buffer; done: (error?: Error | null) => void } | undefined;

  constructor() {
    // A high-water mark of 0: every write pushes back, so undici stops parsing until the chunk is
    // consumed and nothing waits in this stream's buffer, where a cut connection would drop it
    // unwritten (a 1 MiB mark saved little and lost those bytes; docs/benchmarks.md). Not Node's
    // default: 16 KiB up to Node 20 (a smaller chunk did not push back), 64 KiB from Node 22 (a
    // whole first read of 64 KiB did not, and the rest of a cut answer was lost behind it).
    super({ highWaterMark: 0 });
    // A failure is reported by readInto; a body nobody reads may fail unheard.
    this.on('error', () => {});
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    if (this.consumer) this.consume(chunk, done);
    else this.waiting = { chunk, done };
  }

  /** Drops an answer we will not read; the abort it causes is expected. */
  discard(): void {
    this.destroy();
  }

  /** Hands every chunk to `consumer`, in order; resolves when the body ended, rejects if it failed. */
  async readInto(consumer: (chunk: Buffer) => void | Promise<void>): Promise<void> {
    this.consumer = consumer;
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting) this.consume(waiting.chunk, waiting.done);
    await finished(this);
  }

  private consume(chunk: Buffer, done: (error?: Error | null) => void): void {
    let pending: void | Promise<void>;
    try {
      pending = this.consumer?.(chunk);
    } catch (error) {
      done(error as Error);
      return;
    }
    if (pending) pending.then(() => done(), done);
    else done();
  }
}
