import { Tokenizer, TokenParser, TokenType } from '@streamparser/json';
import type { ParsedTokenInfo } from '@streamparser/json';

// A metadata file (`issues_000001.json`: an array of records) read as it streams: the tokenizer
// and token parser of @streamparser/json check that it is JSON, and only the few string fields the
// report needs are kept of each record, so no file, however large or deeply nested, is ever held
// in memory (docs/reliability.md#the-archive-check).

/** Deeper nesting than this is refused: nothing the service writes comes near it. */
const MAX_DEPTH = 64;
/** A single value (or run of spaces) longer than this is refused: the tokenizer would hold it whole. */
export const MAX_VALUE_BYTES = 1 << 20;
/** Fed to the tokenizer in pieces of this size, so a value's length is checked as it grows. */
const SLICE = 64 << 10;
/** Longer strings are not kept as fields (names and URLs are far shorter). */
const MAX_FIELD = 2048;

/**
 * The fields kept of a record, and of the `owner` and `repository` objects in it: names, and what a
 * repository record says of its history (an empty repository's must say it has none).
 */
const FIELDS = new Set(['full_name', 'html_url', 'url', 'name', 'login', 'owner', 'repository', 'created_at', 'pushed_at']);
const NUMBER_FIELDS = new Set(['size']);
const NESTED = new Set(['owner', 'repository']);

/** The fields kept of one record: strings, numbers among NUMBER_FIELDS, and the nested objects among FIELDS. */
export type ThinRecord = { [key: string]: string | number | ThinRecord };

interface Frame {
  object: boolean;
  key: string | undefined;
  expectKey: boolean;
  /** Where this object's kept fields go; undefined when none of it is kept. */
  fields: ThinRecord | undefined;
}

export class MetadataFormatError extends Error {}

/**
 * Feed a metadata file with `write`, then call `end`. `onRecord` gets each element of a top-level
 * array: the kept fields of an object, or undefined for any other value. Throws MetadataFormatError
 * when the file is not JSON or is beyond the bounds above.
 */
export class MetadataRecordReader {
  /** Elements of the top-level array, or undefined when the file is not an array. */
  records: number | undefined;
  private readonly tokenizer = new Tokenizer();
  private readonly parser = new TokenParser({
    // A path deeper than any allowed: the parser builds nothing it would have to keep.
    paths: [`$${'.*'.repeat(MAX_DEPTH + 1)}`],
    keepStack: false,
  });

  private readonly frames: Frame[] = [];
  private bytes = 0;
  private lastToken = 0;
  private readonly onRecord: (record: ThinRecord | undefined) => void;

  constructor(onRecord: (record: ThinRecord | undefined) => void) {
    this.onRecord = onRecord;
    this.parser.onValue = () => {};
    this.parser.onError = (error) => {
      throw new MetadataFormatError(error.message);
    };
    this.tokenizer.onError = (error) => {
      throw new MetadataFormatError(error.message);
    };
    this.tokenizer.onToken = (token) => {
      // Within the piece being written: a value may have started anywhere in it.
      this.lastToken = this.bytes;
      this.observe(token);
      this.parser.write(token);
    };
  }

  write(chunk: Buffer): void {
    if (this.bytes === 0 && startsWithByteOrderMark(chunk)) throw new MetadataFormatError('starts with a byte-order mark');
    for (let at = 0; at < chunk.length; at += SLICE) {
      const slice = chunk.subarray(at, at + SLICE);
      this.tokenizer.write(slice);
      this.bytes += slice.length;
      if (this.bytes - this.lastToken > MAX_VALUE_BYTES) {
        throw new MetadataFormatError(`holds a single value over ${MAX_VALUE_BYTES >> 20} MiB long, which this check does not read`);
      }
    }
  }

  end(): void {
    if (!this.tokenizer.isEnded) this.tokenizer.end();
    if (!this.parser.isEnded) throw new MetadataFormatError('ends before its JSON value does');
  }

  private observe({ token, value }: ParsedTokenInfo): void {
    const frame = this.frames.at(-1);
    switch (token) {
      case TokenType.LEFT_BRACE:
      case TokenType.LEFT_BRACKET: {
        if (this.frames.length >= MAX_DEPTH) throw new MetadataFormatError(`is nested deeper than ${MAX_DEPTH} levels`);
        const object = token === TokenType.LEFT_BRACE;
        let fields: ThinRecord | undefined;
        if (object && frame && !frame.object && this.frames.length === 1) fields = {};
        else if (object && frame?.fields && frame.key !== undefined && NESTED.has(frame.key)) fields = frame.fields[frame.key] = {};
        if (!frame) this.records = object ? undefined : 0;
        this.frames.push({ object, key: undefined, expectKey: object, fields });
        return;
      }
      case TokenType.RIGHT_BRACE:
      case TokenType.RIGHT_BRACKET: {
        const closed = this.frames.pop();
        if (this.frames.length === 1) this.element(closed?.fields);
        return;
      }
      case TokenType.COMMA:
        if (frame?.object) frame.expectKey = true;
        return;
      case TokenType.COLON:
        return;
      default:
        if (frame?.object && frame.expectKey) {
          frame.key = typeof value === 'string' ? value : undefined;
          frame.expectKey = false;
          return;
        }
        if (frame?.fields && frame.key !== undefined && FIELDS.has(frame.key) && typeof value === 'string' && value.length <= MAX_FIELD) {
          frame.fields[frame.key] = value;
        }
        if (frame?.fields && frame.key !== undefined && NUMBER_FIELDS.has(frame.key) && typeof value === 'number') frame.fields[frame.key] = value;
        if (this.frames.length === 1) this.element(undefined);
    }
  }

  private element(fields: ThinRecord | undefined): void {
    if (this.records === undefined) return;
    this.records++;
    this.onRecord(fields);
  }
}

function startsWithByteOrderMark(chunk: Buffer): boolean {
  const [a, b, c] = chunk;
  return (a === 0xef && b === 0xbb && c === 0xbf) || (a === 0xfe && b === 0xff) || (a === 0xff && b === 0xfe);
}
