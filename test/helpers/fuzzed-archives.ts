import fc from 'fast-check';
import { gzipSync } from 'node:zlib';
import { gzipMember, type GzipShape, PAST_ONE_READ, polyglotGzip } from './gzip-bytes.js';
import { gnuLongName, member, paxHeader } from './tar-bytes.js';

// Migration archives generated and then damaged, for the extractor differential: names that are
// one under letter case or Unicode normalization, every way tar spells a name (ustar, a prefix,
// pax, GNU long names, both at once), header fields rewritten with the checksum made right again,
// flipped bytes, cut archives; gzip streams with optional header fields, flushes, empty deflate
// blocks, first inflated chunks of 1 to 3 bytes, a member after the first, bytes after the end,
// and a compressed stream inside, alone or with a tar archive in its header.

const NFC = 'caf\u00e9';
const NFD = 'cafe\u0301';
const PACK = `pack-${'3'.repeat(40)}`;

/** Segments of names, many of them one under letter case or Unicode normalization. */
const SEGMENTS = ['a', 'A', 'b', 'notes', 'NOTES', 'data.bin', '\u00df', 'ss', 'SS', 'k', 'K', '\u212a', '\u017f', 's', 'i', '\u0130', NFC, NFD, 'x.json'];
const METADATA = ['schema.json', 'issues_000001.json', 'ISSUES_000001.json', 'Issues_000001.json', 'users_000001.json', `${NFC}_000001.json`, `${NFD}_000001.json`];
const GIT_DATA = [
  'HEAD', 'Head', 'config', 'CONFIG', 'description', 'packed-refs', 'PACKED-REFS', 'refs/', 'refs/heads/main', 'refs/heads/Main', 'Refs/heads/main',
  `objects/pack/${PACK}.pack`, `objects/pack/${PACK}.PACK`, `objects/pack/${PACK}.idx`, 'objects/info/', 'info/exclude', 'hooks/pre-receive',
];
/** Segments no importer takes as they are, or only some do. */
const ODD = ['.', '..', '', ' ', '-', '\\', 'l'.repeat(101), 'm'.repeat(256), '@LongLink', 'PaxHeader'];

const segment = fc.constantFrom(...SEGMENTS);
const nameArbitrary = fc.tuple(
  fc.oneof({ weight: 14, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('./', './', '/', '././') }),
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...METADATA) },
    { weight: 4, arbitrary: fc.array(segment, { minLength: 1, maxLength: 3 }).map((segments) => `attachments/${segments.join('/')}`) },
    { weight: 3, arbitrary: fc.constantFrom(...GIT_DATA).map((rest) => `repositories/acme/r.git/${rest}`) },
    { weight: 2, arbitrary: fc.array(segment, { minLength: 1, maxLength: 2 }).map((segments) => segments.join('/')) },
    { weight: 1, arbitrary: fc.array(fc.constantFrom(...ODD, ...SEGMENTS), { minLength: 1, maxLength: 3 }).map((segments) => segments.join('/')) },
  ),
).map(([prefix, name]) => prefix + name);

/** How a member's name is written (ustar's field, its prefix, pax, GNU long names, or several at once), and how often. */
const SPELLINGS = {
  ustar: 6, prefix: 2, pax: 4, gnu: 4, 'gnu-header': 2, v7: 2, 'pax-size': 2, 'pax-times': 2, 'pax+gnu': 1, 'pax+pax': 1, 'gnu+gnu': 1,
} as const;
type Spelling = keyof typeof SPELLINGS;

const memberArbitrary = fc.record({
  name: nameArbitrary,
  directory: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  data: fc.uint8Array({ maxLength: 1200 }),
  spelling: fc.oneof(...Object.entries(SPELLINGS).map(([way, weight]) => ({ weight, arbitrary: fc.constant(way as Spelling) }))),
});
type MemberCase = typeof memberArbitrary extends fc.Arbitrary<infer T> ? T : never;

/** Bytes a header field is rewritten with: digits, ends, separators, type flags, base-256, UTF-8. */
const FIELD_BYTES = [...Buffer.from('\0 0178/.x5gLK', 'latin1'), 0x80, 0xff, 0xc3, 0xa9];
/**
 * Offset and length of each header field (ustar): name, mode, uid, gid, size, mtime, checksum, type
 * flag, link name, magic, version, prefix.
 */
const FIELDS: [number, number][] = [
  [0, 100], [100, 8], [108, 8], [116, 8], [124, 12], [136, 12], [148, 8], [156, 1], [157, 100], [257, 6], [263, 2], [345, 155],
];

const tarMutation = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), header: fc.nat(), at: fc.nat({ max: 511 }), xor: fc.integer({ min: 1, max: 255 }) }),
  fc.record({
    kind: fc.constant('field' as const),
    header: fc.nat(),
    field: fc.nat({ max: FIELDS.length - 1 }),
    at: fc.nat(),
    bytes: fc.array(fc.constantFrom(...FIELD_BYTES), { minLength: 1, maxLength: 4 }),
    fixChecksum: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  }),
);

/** Nothing, `times` times as often as each of `rare`. */
const rarely = <T>(times: number, ...rare: fc.Arbitrary<T>[]): fc.Arbitrary<T | undefined> =>
  fc.oneof({ weight: times, arbitrary: fc.constant(undefined) }, ...rare.map((arbitrary) => ({ weight: 1, arbitrary })));

const gzipArbitrary = fc.record({
  extra: rarely(8, fc.uint8Array({ maxLength: 40 })),
  fileName: rarely(8, fc.constantFrom('a.tar', 'x\u00e9.tar', '').map((name) => Buffer.from(name, 'latin1'))),
  comment: rarely(10, fc.uint8Array({ minLength: 1, maxLength: 30 }).map((bytes) => Buffer.from(bytes.map((byte) => byte || 1)))),
  headerCrc: rarely(10, fc.constant(true)),
  mtimeFlagsOs: rarely(10, fc.uint8Array({ minLength: 6, maxLength: 6 })),
  cuts: rarely(3, fc.array(fc.record({ at: fc.nat({ max: 20_000 }), emptyBlocks: fc.nat({ max: 3 }) }), { minLength: 1, maxLength: 3 })),
  level: fc.integer({ min: 0, max: 9 }),
  /** Bytes of the first inflated chunk, empty blocks after them (before a stream inside, now and then a read's worth). */
  slowStart: rarely(2, fc.constantFrom(1, 2, 3)),
  /** Where the stream becomes a second gzip member. */
  secondMember: rarely(12, fc.nat()),
  after: rarely(
    10,
    fc.nat({ max: 1100 }).map((length) => Buffer.alloc(length + 1)),
    fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
    fc.constant(Buffer.from([0x1f, 0x8b, 8, 0])),
    fc.constant(gzipSync(Buffer.alloc(0))),
  ),
  flips: rarely(12, fc.array(fc.record({ at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }), { minLength: 1, maxLength: 2 })),
  cut: rarely(20, fc.nat()),
});

/** One archive: its members, the damage done to its tar, and the shape of its gzip. */
export const fuzzedArchive = fc.record({
  members: fc.array(memberArbitrary, { minLength: 1, maxLength: 4 }),
  tarMutations: rarely(3, fc.array(tarMutation, { minLength: 1, maxLength: 2 })),
  ending: fc.oneof(
    { weight: 10, arbitrary: fc.constantFrom('marker' as const, 'record' as const) },
    { weight: 1, arbitrary: fc.constantFrom('one-zero-block' as const, 'none' as const, 'junk' as const, 'member' as const) },
  ),
  tarCut: rarely(15, fc.nat()),
  /** A compressed stream inside: gzip again, or gzip whose FEXTRA field holds the tar of `shown`. */
  inner: rarely(38, fc.constant('gzip' as const), fc.constant('polyglot' as const)),
  shown: fc.array(memberArbitrary, { minLength: 1, maxLength: 2 }),
  /** A stream inside that starts slowly gets a read's worth of empty blocks one time in this many. */
  pastOneRead: fc.nat({ max: 2 }),
  gzip: gzipArbitrary,
});
export type FuzzedArchive = typeof fuzzedArchive extends fc.Arbitrary<infer T> ? T : never;

/** A member as tar bytes, spelled as asked: pieces that each start with a header. */
function memberBytes(spec: MemberCase): Buffer[] {
  const name = spec.directory && !spec.name.endsWith('/') ? `${spec.name}/` : spec.name;
  const type = spec.directory ? '5' : '0';
  const data = spec.directory ? Buffer.alloc(0) : name.endsWith('.json') ? Buffer.from(spec.data.length % 2 ? '[]' : '[{"id":1}]') : Buffer.from(spec.data);
  const fits = Buffer.byteLength(name) <= 100;
  const placeholder = `ignored-${spec.data.length}`;
  const gnu = { magic: 'ustar  \0' };
  switch (fits || spec.spelling !== 'ustar' ? spec.spelling : 'pax') {
    case 'ustar':
      return [member({ name, type }, data)];
    case 'v7':
      return fits ? [member({ name, type, magic: '\0'.repeat(8) }, data)] : [paxHeader([['path', name]]), member({ name: placeholder, type }, data)];
    case 'gnu-header':
      return fits ? [member({ name, type, ...gnu }, data)] : [gnuLongName(name), member({ name: placeholder, type, ...gnu }, data)];
    case 'prefix': {
      const bytes = Buffer.from(name);
      for (let at = bytes.indexOf(0x2f); at !== -1; at = bytes.indexOf(0x2f, at + 1)) {
        if (at <= 155 && bytes.length - at - 1 <= 100 && bytes.length - at - 1 > 0) {
          return [member({ name: bytes.subarray(at + 1).toString(), type, at345: bytes.subarray(0, at) }, data)];
        }
      }
      return [paxHeader([['path', name]]), member({ name: placeholder, type }, data)];
    }
    case 'pax':
      return [paxHeader([['path', name]]), member({ name: placeholder, type }, data)];
    case 'pax-size':
      // The size in the pax header only; the header's own says nothing is there.
      return [paxHeader([['path', name], ['size', String(data.length)]]), Buffer.concat([member({ name: placeholder, type, size: 0 }), padded(data)])];
    case 'pax-times':
      return [paxHeader([['mtime', '1700000000.25'], ['comment', 'made here']]), member({ name, type }, data)];
    case 'gnu':
      return [gnuLongName(name), member({ name: placeholder, type, ...gnu }, data)];
    case 'pax+gnu':
      return [paxHeader([['path', name]]), gnuLongName(`${name}.gnu`), member({ name: placeholder, type, ...gnu }, data)];
    case 'pax+pax':
      return [paxHeader([['path', name]]), paxHeader([['path', `${name}.second`]]), member({ name: placeholder, type }, data)];
    case 'gnu+gnu':
      return [gnuLongName(name), gnuLongName(`${name}.second`), member({ name: placeholder, type, ...gnu }, data)];
  }
}

function padded(data: Buffer): Buffer {
  return Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
}

/** The tar of the members, and the offset of every header in it (the generator's own framing). */
function tarOfMembers(members: MemberCase[]): { tar: Buffer; headers: number[] } {
  const pieces: Buffer[] = [];
  const headers: number[] = [];
  let length = 0;
  for (const piece of members.flatMap(memberBytes)) {
    headers.push(length);
    pieces.push(piece);
    length += piece.length;
  }
  return { tar: Buffer.concat(pieces), headers };
}

function fixChecksum(tar: Buffer, offset: number): void {
  tar.write('        ', offset + 148, 'latin1');
  let sum = 0;
  for (let i = offset; i < offset + 512; i++) sum += tar[i] as number;
  tar.write(`${sum.toString(8).padStart(6, '0')}\0 `, offset + 148, 'latin1');
}

function damagedTar(archive: FuzzedArchive): Buffer {
  const { tar, headers } = tarOfMembers(archive.members);
  for (const mutation of archive.tarMutations ?? []) {
    if (headers.length === 0) break;
    const offset = headers[mutation.header % headers.length] as number;
    if (mutation.kind === 'flip') {
      tar[offset + mutation.at] = (tar[offset + mutation.at] as number) ^ mutation.xor;
      continue;
    }
    const [start, length] = FIELDS[mutation.field] as [number, number];
    tar.set(mutation.bytes.slice(0, length), offset + start + (mutation.at % length));
    if (mutation.fixChecksum && start !== 148) fixChecksum(tar, offset);
  }
  const endings = {
    marker: Buffer.alloc(1024),
    // GNU tar pads to a record of 10,240 bytes.
    record: Buffer.alloc(10_240 - (tar.length % 10_240) + (tar.length % 10_240 > 9216 ? 10_240 : 0)),
    'one-zero-block': Buffer.alloc(512),
    none: Buffer.alloc(0),
    junk: Buffer.concat([Buffer.alloc(1024), Buffer.from('junk after the end')]),
    member: Buffer.concat([Buffer.alloc(1024), member({ name: 'late.json' }, '[]')]),
  };
  const whole = Buffer.concat([tar, endings[archive.ending]]);
  return archive.tarCut === undefined ? whole : whole.subarray(0, archive.tarCut % (whole.length + 1));
}

/** The .tar.gz a generated archive describes. */
export function archiveOf(archive: FuzzedArchive): Buffer {
  const tar = damagedTar(archive);
  const g = archive.gzip;
  const inner = archive.inner === 'gzip'
    ? gzipSync(tar)
    : archive.inner === 'polyglot'
      ? polyglotGzip(tar, Buffer.concat([tarOfMembers(archive.shown).tar, Buffer.alloc(1024)]))
      : undefined;
  const content = inner ?? tar;
  const cuts = [...(g.cuts ?? [])];
  if (g.slowStart !== undefined) cuts.push({ at: g.slowStart, emptyBlocks: inner && archive.pastOneRead === 0 ? PAST_ONE_READ : 2 });
  const shape: GzipShape = {
    cuts,
    level: g.level,
    ...(g.extra ? { extra: Buffer.from(g.extra) } : {}),
    ...(g.fileName ? { fileName: g.fileName } : {}),
    ...(g.comment ? { comment: g.comment } : {}),
    ...(g.headerCrc ? { headerCrc: true } : {}),
    ...(g.mtimeFlagsOs ? { mtimeFlagsOs: Buffer.from(g.mtimeFlagsOs) } : {}),
  };
  const split = g.secondMember === undefined ? content.length : g.secondMember % (content.length + 1);
  const members = [gzipMember(content.subarray(0, split), shape)];
  if (split < content.length) members.push(gzipMember(content.subarray(split), { level: g.level }));
  const bytes = Buffer.concat([...members, ...(g.after ? [g.after] : [])]);
  for (const flip of g.flips ?? []) bytes[flip.at % bytes.length] = (bytes[flip.at % bytes.length] as number) ^ flip.xor;
  return g.cut === undefined ? bytes : bytes.subarray(0, g.cut % bytes.length);
}
