// What the check reads and what GNU tar and bsdtar read must be the same members, or an archive
// could verify as one thing and extract as another. Tar readers part ways on many headers (npm's
// `tar` reads a checksum from 12 bytes, GNU tar from 8; one reads a prefix another takes for times);
// these checks refuse every header and extended header on which common readers could disagree
// (docs/reliability.md#the-archive-check), and decode the ones they read alike.

const BLOCK = 512;

/** Type flags a member may have: files, links, directories, devices, and the headers that name them. */
const FILE_TYPES = new Set(['0', '\0', '7']);
const NAMING_TYPES = new Set(['x', 'g', 'L', 'K']);
const OTHER_TYPES = new Set(['1', '2', '3', '4', '5', '6']);

type HeaderFormat = 'ustar' | 'gnu' | 'v7';

export interface CheckedHeader {
  /** The type flag as written ('\0' for an old-style file). */
  flag: string;
  /** The data size the header announces (what both readers skip). */
  size: number;
  format: HeaderFormat;
  /** Permission bits, with set-user-ID, set-group-ID and sticky. */
  mode: number;
  /** The name, with a POSIX prefix joined to it, and the link name, as written (UTF-8 undecoded). */
  name: Buffer;
  linkName: Buffer;
}

export function isZeroBlock(block: Buffer): boolean {
  for (let i = 0; i < BLOCK; i += 8) if (block.readBigUInt64LE(i) !== 0n) return false;
  return true;
}

/**
 * Reads the fields of a header block that decide the member list, and returns why the two readers
 * could disagree on it, or the fields when they cannot.
 */
export function checkHeaderBlock(block: Buffer): CheckedHeader | { disagreement: string } {
  const magic = block.toString('latin1', 257, 265);
  const format: HeaderFormat | undefined =
    magic === 'ustar\u000000' ? 'ustar' : magic === 'ustar  \0' ? 'gnu' : magic === '\0'.repeat(8) ? 'v7' : undefined;
  // GNU tar takes any "ustar\0" as POSIX and reads a name prefix; npm's tar only with version "00".
  if (!format) return { disagreement: 'a header with an unknown format marker' };
  const flag = String.fromCharCode(block[156] as number);
  if (!FILE_TYPES.has(flag) && !NAMING_TYPES.has(flag) && !OTHER_TYPES.has(flag)) {
    // GNU sparse files, multi-volume parts, dump directories, vendor types: GNU tar reads data or
    // names in them that npm's tar skips.
    return { disagreement: `a member of type ${JSON.stringify(flag)}, which only some tar readers understand` };
  }
  // GNU tar reads the checksum from its 8 bytes; npm's tar from 12, running into the type flag and
  // link name; bsdtar refuses a header with anything but spaces and NULs after the digits. Only
  // digits ended within the 8 bytes, equal to the sum, read alike.
  const checksum = /^ *([0-7]{1,7})[ \0]+$/.exec(block.toString('latin1', 148, 156));
  if (!checksum?.[1] || parseInt(checksum[1], 8) !== unsignedSum(block)) return { disagreement: 'a header whose checksum is not written plainly, or is wrong' };
  for (const [field, start, length, base256Max] of NUMERIC_FIELDS) {
    if (readNumber(block, start, length, base256Max) === undefined) {
      return { disagreement: `a header whose ${field} field is not a plain number` };
    }
  }
  for (const [field, start] of DEVICE_FIELDS) {
    if (readNumber(block, start, 8, 0) === undefined) {
      return { disagreement: `a header whose ${field} field (bytes ${start}–${start + 7}) is not a plain number, which bsdtar refuses in an archive's first header, device or not` };
    }
  }
  const size = readNumber(block, 124, 12, Number.MAX_SAFE_INTEGER) as number;
  if (!FILE_TYPES.has(flag) && !NAMING_TYPES.has(flag) && size !== 0) {
    // Directories and links carry no data; readers differ on whether to skip what one claims.
    return { disagreement: 'a link, directory or device header that announces data' };
  }
  // An empty long name: npm's tar skips it, GNU tar takes "." for the next member's name.
  if ((flag === 'L' || flag === 'K') && size === 0) return { disagreement: 'an empty GNU long name' };
  for (const [field, start, length] of textFields(format)) {
    // npm's tar ends a name at its first NUL only up to the next line break (or other line
    // separator); GNU tar at the NUL. Only NULs may follow it.
    const end = block.indexOf(0, start);
    if (end !== -1 && end < start + length && block.subarray(end, start + length).some((byte) => byte !== 0)) {
      return { disagreement: `a header whose ${field} field holds more after its end` };
    }
  }
  // libarchive reads a GNU header's sparse map, extension flag and real size whatever its type; GNU
  // tar only a sparse file's. A map made bsdtar read the next block as more of it, and the blocks
  // after as other members than GNU tar's (a symbolic link for a hook); a real size, another length.
  if (format === 'gnu' && block.subarray(386, 500).some((byte) => byte !== 0)) {
    return { disagreement: 'a GNU header with sparse data or a real size, which bsdtar reads for any member and GNU tar for sparse ones only' };
  }
  // With byte 475 set, npm's tar joins even an empty prefix to the name ("/name"); GNU tar does not.
  if (format === 'ustar' && block[475] !== 0 && block[345] === 0) return { disagreement: 'a header with a name prefix that readers split differently' };
  const prefix = format === 'ustar' ? textField(block, 345, 155) : Buffer.alloc(0);
  const name = prefix.length > 0 ? Buffer.concat([prefix, Buffer.from('/'), textField(block, 0, 100)]) : textField(block, 0, 100);
  const mode = (readNumber(block, 100, 8, 0) as number) & 0o7777;
  return { flag, size, format, mode, name, linkName: textField(block, 157, 100) };
}

/** A text field up to its first NUL (nothing but NULs may follow it: checked above). */
function textField(block: Buffer, start: number, length: number): Buffer {
  const end = block.indexOf(0, start);
  return block.subarray(start, end === -1 || end > start + length ? start + length : end);
}

/** The numeric fields GNU tar reads: name, offset, length, and the largest base-256 value it takes there. */
const NUMERIC_FIELDS: [string, number, number, number][] = [
  ['mode', 100, 8, 0],
  ['uid', 108, 8, 0xffffffff],
  ['gid', 116, 8, 0xffffffff],
  ['size', 124, 12, Number.MAX_SAFE_INTEGER],
  ['mtime', 136, 12, Number.MAX_SAFE_INTEGER],
];

/**
 * Where ustar keeps a device's numbers: GNU tar reads them for devices only, and an old-style (v7)
 * header has no such fields. libarchive, since 3.3.0, takes an archive for tar only if both are
 * numbers of its kind in the first header whatever its format (`archive_read_format_tar_bid` and
 * `validate_number_field` in archive_read_support_format_tar.c: a first byte of NUL, 0x80 or 0xff,
 * or spaces, octal digits, then spaces and NULs): bsdtar says "Unrecognized archive format" where
 * GNU tar extracts every member (seen with bsdtar 3.6.2). Held here in every header, not the first
 * only, and read as the other numbers are: stricter than libarchive, which also takes all spaces,
 * base-256, or a NUL followed by anything.
 */
const DEVICE_FIELDS: [string, number][] = [
  ['device major', 329],
  ['device minor', 337],
];

/** The header's bytes summed as unsigned, the checksum field counted as spaces. */
function unsignedSum(block: Buffer): number {
  let sum = 8 * 0x20;
  for (let i = 0; i < BLOCK; i++) if (i < 148 || i >= 156) sum += block[i] as number;
  return sum;
}

function textFields(format: HeaderFormat): [string, number, number][] {
  const fields: [string, number, number][] = [['name', 0, 100], ['link name', 157, 100]];
  // In GNU-format headers bytes 345–500 are times and sparse data, which neither reader takes as a name.
  if (format === 'ustar') fields.push(['name prefix', 345, 155]);
  return fields;
}

/**
 * A numeric field as readers agree on it: optional leading spaces, octal digits, then only spaces
 * and NULs (or the end of the field); or GNU's positive base-256. Anything else each reader takes
 * its own way (GNU tar refuses it and skips to the next header it can find, or reads up to the
 * terminator; bsdtar refuses the header; npm's tar reads the digits up to the first other character).
 */
function readNumber(block: Buffer, start: number, length: number, base256Max: number): number | undefined {
  if (block[start] === 0x80 && base256Max > 0) {
    let value = 0;
    for (let i = start + 1; i < start + length; i++) value = value * 256 + (block[i] as number);
    return value <= base256Max ? value : undefined;
  }
  const text = block.toString('latin1', start, start + length);
  // Left empty (as writers do for fields they have no value for): both read 0.
  if (/^\0[\0 ]*$/.test(text)) return 0;
  const match = /^ *([0-7]+)[ \0]*$/.exec(text);
  return match?.[1] === undefined ? undefined : parseInt(match[1], 8);
}

/** pax keywords that both readers apply alike, or that neither uses for the member list. */
const PAX_KEYWORDS = new Set(['path', 'linkpath', 'size', 'mtime', 'atime', 'ctime', 'uid', 'gid', 'uname', 'gname', 'comment']);
const PAX_NUMBER = /^(?:size|uid|gid)$/;
/** GNU tar fails (exit 2) on a pax uid or gid above this; bsdtar takes it. */
const MAX_ID = 0xffffffff;
const PAX_TIME = /^[amc]time$/;

export interface PaxRecords {
  path?: string;
  linkpath?: string;
  size?: number;
}

/**
 * A pax extended header's body, read by record length as POSIX (and GNU tar) does, or why the
 * library's line-by-line reading could differ: a value holding a line break or a NUL, a length that
 * does not match, a keyword outside the few both readers treat alike (GNU.sparse.* among them).
 */
export function readPaxBody(body: string, global: boolean): PaxRecords | { disagreement: string } {
  const bytes = Buffer.from(body, 'utf8');
  if (body.includes('\uFFFD')) return { disagreement: 'an extended header that is not valid UTF-8' };
  const records: PaxRecords = {};
  let at = 0;
  while (at < bytes.length) {
    const space = bytes.indexOf(0x20, at);
    const lengthText = space === -1 ? '' : bytes.toString('latin1', at, space);
    const length = /^[1-9][0-9]{0,8}$/.test(lengthText) ? Number(lengthText) : 0;
    if (length === 0 || at + length > bytes.length || bytes[at + length - 1] !== 0x0a) {
      return { disagreement: 'an extended header with a malformed record' };
    }
    const record = bytes.toString('utf8', space + 1, at + length - 1);
    at += length;
    const equals = record.indexOf('=');
    const keyword = equals > 0 ? record.slice(0, equals) : '';
    const value = record.slice(equals + 1);
    if (/[\n\0]/.test(record)) return { disagreement: 'an extended header whose value holds a line break or NUL' };
    if (/^(SCHILY|LIBARCHIVE)\.xattr\./.test(keyword)) {
      // bsdtar sets them on the file, GNU tar does not: `security.capability` gives a program root's
      // powers as set-user-ID does, and a name a file system does not take fails bsdtar alone.
      return { disagreement: `an extended attribute (${keyword}), which bsdtar sets on the file and GNU tar does not` };
    }
    if (!PAX_KEYWORDS.has(keyword)) return { disagreement: `an extended header keyword ${JSON.stringify(keyword)} that tar readers treat differently` };
    if (PAX_NUMBER.test(keyword) && !/^\d{1,15}$/.test(value)) return { disagreement: `an extended header whose ${keyword} is not a number` };
    if ((keyword === 'uid' || keyword === 'gid') && Number(value) > MAX_ID) return { disagreement: `an extended header whose ${keyword} is out of GNU tar's range` };
    // bsdtar keeps the header's own name for an empty one; GNU tar takes ".".
    if ((keyword === 'path' || keyword === 'linkpath') && value === '') return { disagreement: `an extended header whose ${keyword} is empty` };
    if (PAX_TIME.test(keyword) && !/^-?\d{1,15}(\.\d{1,9})?$/.test(value)) return { disagreement: `an extended header whose ${keyword} is not a time` };
    if (keyword === 'path' || keyword === 'linkpath' || keyword === 'size') {
      // A global header that renames or resizes every later member: the readers apply it differently.
      if (global) return { disagreement: `a global extended header that sets ${keyword}` };
      if (records[keyword] !== undefined) return { disagreement: `an extended header that sets ${keyword} twice` };
      if (keyword === 'size') records.size = Number(value);
      else if (keyword === 'path') records.path = value;
      else records.linkpath = value;
    }
  }
  return records;
}

/** A GNU long name or link body: the name and NULs after it, nothing else (the readers cut it apart differently). */
export function readLongName(body: string): string | { disagreement: string } {
  const match = /^([^\0]+)\0+$/.exec(body);
  if (!match?.[1] || body.includes('\uFFFD')) return { disagreement: 'a GNU long name that is not one plain name' };
  return match[1];
}
