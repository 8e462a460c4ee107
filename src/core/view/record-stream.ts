import { createReadStream } from 'node:fs';
import { Tokenizer, TokenType } from '@streamparser/json';
import { MetadataFormatError } from '../archive/metadata-records.js';

// A metadata file read whole record by whole record as it streams: the tokenizer of
// @streamparser/json (as the archive check reads it, core/archive/metadata-records.ts) finds where
// each element of the top-level array begins and ends, and only that element's bytes are held, then
// given to JSON.parse. metadata-records.ts keeps a few fields of each record; a page needs all of it.

/** A record longer than this is refused: the service writes none near it (a body is at most 65,536 characters). */
const MAX_RECORD_BYTES = 1 << 20;
const SLICE = 64 << 10;

export type JsonRecord = Record<string, unknown>;

export class RecordTooLargeError extends Error {}

/** Each object of the file's top-level array, parsed; anything else in the array is passed over. */
export async function* wholeRecords(path: string): AsyncGenerator<JsonRecord> {
  const splitter = new RecordSplitter();
  for await (const chunk of createReadStream(path, { highWaterMark: SLICE }) as AsyncIterable<Buffer>) yield* splitter.write(chunk);
  splitter.end();
}

class RecordSplitter {
  private readonly tokenizer = new Tokenizer();
  private depth = 0;
  private arrayAtTop = false;
  /** Where the current record began in the stream, or -1 outside one. */
  private start = -1;
  /** Its bytes in the slices before the current one. */
  private held: Buffer[] = [];
  private heldBytes = 0;
  private slice: Buffer = Buffer.alloc(0);
  private sliceStart = 0;
  private ready: JsonRecord[] = [];

  constructor() {
    // What the token callback throws comes back here.
    this.tokenizer.onError = (error) => {
      throw error instanceof RecordTooLargeError || error instanceof MetadataFormatError ? error : new MetadataFormatError(error.message);
    };
    this.tokenizer.onToken = ({ token, offset }) => this.token(token, offset);
  }

  * write(slice: Buffer): Generator<JsonRecord> {
    this.slice = slice;
    this.tokenizer.write(slice);
    if (this.start >= 0) {
      const from = Math.max(0, this.start - this.sliceStart);
      this.held.push(slice.subarray(from));
      this.heldBytes += slice.length - from;
      if (this.heldBytes > MAX_RECORD_BYTES) throw new RecordTooLargeError(`holds a record over ${MAX_RECORD_BYTES >> 20} MiB long`);
    }
    this.sliceStart += slice.length;
    const ready = this.ready;
    this.ready = [];
    yield* ready;
  }

  end(): void {
    if (!this.tokenizer.isEnded) this.tokenizer.end();
  }

  private token(token: TokenType, offset: number): void {
    const opens = token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET;
    const closes = token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET;
    if (opens) {
      if (this.depth === 0) this.arrayAtTop = token === TokenType.LEFT_BRACKET;
      else if (this.depth === 1 && this.arrayAtTop && token === TokenType.LEFT_BRACE) this.start = offset;
      this.depth++;
    } else if (closes) {
      this.depth--;
      if (this.depth === 1 && this.start >= 0) this.finish(offset + 1);
    }
  }

  private finish(end: number): void {
    const tail = this.slice.subarray(Math.max(0, this.start - this.sliceStart), end - this.sliceStart);
    const bytes = this.held.length > 0 ? Buffer.concat([...this.held, tail]) : tail;
    this.start = -1;
    this.held = [];
    this.heldBytes = 0;
    if (bytes.length > MAX_RECORD_BYTES) throw new RecordTooLargeError(`holds a record over ${MAX_RECORD_BYTES >> 20} MiB long`);
    let value: unknown;
    try {
      value = JSON.parse(bytes.toString('utf8'));
    } catch (error) {
      throw new MetadataFormatError((error as Error).message);
    }
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) this.ready.push(value as JsonRecord);
  }
}
