import { Tokenizer, TokenType } from '@streamparser/json';
import type { ParsedTokenInfo } from '@streamparser/json';

// A metadata file (`issues_000001.json`: an array of records) read as it streams: the tokenizer of
// @streamparser/json checks its tokens and the reader their order, and only the few string fields
// the report needs are kept of each record, so no file, however large or deeply nested, is ever
// held in memory (docs/reliability.md#the-archive-check). The library's token parser is not used:
// each one builds a tree of 66 Maps for its path, which V8 came to allocate in the old space, so
// 100,000 small files took the heap to 150 MB of garbage.

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

/** Tokens as a message names them. */
const SHOWN: Partial<Record<TokenType, string>> = {
  [TokenType.LEFT_BRACE]: '"{"',
  [TokenType.RIGHT_BRACE]: '"}"',
  [TokenType.LEFT_BRACKET]: '"["',
  [TokenType.RIGHT_BRACKET]: '"]"',
  [TokenType.COLON]: '":"',
  [TokenType.COMMA]: '","',
};

/** What may come next in an array or object, or at the top. */
type Expect = 'value' | 'value or end' | 'key' | 'key or end' | 'colon' | 'comma or end' | 'nothing';

interface Frame {
  object: boolean;
  key: string | undefined;
  expect: Expect;
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
  private readonly frames: Frame[] = [];
  /** What may come next at the top: one value, then nothing. */
  private top: Expect = 'value';
  private bytes = 0;
  private lastToken = 0;
  private readonly onRecord: (record: ThinRecord | undefined) => void;

  constructor(onRecord: (record: ThinRecord | undefined) => void) {
    this.onRecord = onRecord;
    this.tokenizer.onError = (error) => {
      throw new MetadataFormatError(error.message);
    };
    this.tokenizer.onToken = (token) => {
      // Within the piece being written: a value may have started anywhere in it.
      this.lastToken = this.bytes;
      this.order(token.token);
      this.observe(token);
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
    if (this.top !== 'nothing') throw new MetadataFormatError('ends before its JSON value does');
  }

  /** Checks that a token may come where it does (JSON's grammar), and says what may follow it. */
  private order(token: TokenType): void {
    const frame = this.frames.at(-1);
    const expect = frame ? frame.expect : this.top;
    let fits: boolean;
    let next: Expect;
    if (token === TokenType.COMMA) {
      fits = expect === 'comma or end';
      next = frame?.object ? 'key' : 'value';
    } else if (token === TokenType.COLON) {
      fits = expect === 'colon';
      next = 'value';
    } else if (token === TokenType.RIGHT_BRACKET || token === TokenType.RIGHT_BRACE) {
      const object = token === TokenType.RIGHT_BRACE;
      fits = frame?.object === object && (expect === 'comma or end' || expect === (object ? 'key or end' : 'value or end'));
      // observe() pops the frame: what holds it now has a whole value.
      next = this.frames.length > 1 ? 'comma or end' : 'nothing';
    } else if (expect === 'key' || expect === 'key or end') {
      fits = token === TokenType.STRING;
      next = 'colon';
    } else {
      fits = expect === 'value' || expect === 'value or end';
      // observe() pushes a container's own frame; at the top, its close ends the value.
      next = frame || token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET ? 'comma or end' : 'nothing';
    }
    if (!fits) throw new MetadataFormatError(`${SHOWN[token] ?? 'a value'} where ${expect === 'nothing' ? 'its value has ended' : `a ${expect} belongs`}`);
    const closes = token === TokenType.RIGHT_BRACKET || token === TokenType.RIGHT_BRACE;
    const holder = closes ? this.frames.at(-2) : frame;
    if (holder) holder.expect = next;
    else this.top = next;
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
        this.frames.push({ object, key: undefined, expect: object ? 'key or end' : 'value or end', fields });
        return;
      }
      case TokenType.RIGHT_BRACE:
      case TokenType.RIGHT_BRACKET: {
        const closed = this.frames.pop();
        if (this.frames.length === 1) this.element(closed?.fields);
        return;
      }
      case TokenType.COMMA:
        return;
      case TokenType.COLON:
        return;
      default:
        if (frame?.object && frame.expect === 'colon') {
          frame.key = typeof value === 'string' ? value : undefined;
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
