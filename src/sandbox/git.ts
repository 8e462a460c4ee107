import { createHash } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';

// Real git objects written without git: loose objects and a version 2 pack with its index, so the
// sandbox serves archives that `git fsck` accepts on machines where git is not installed.

export type GitObjectType = 'commit' | 'tree' | 'blob' | 'tag';

export interface GitObject {
  type: GitObjectType;
  body: Buffer;
  /** Hex SHA-1 of `<type> <size>\0<body>`. */
  id: string;
}

const PACK_TYPE: Record<GitObjectType, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };

export function gitObject(type: GitObjectType, body: Buffer | string): GitObject {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const id = createHash('sha1').update(`${type} ${bytes.length}\0`).update(bytes).digest('hex');
  return { type, body: bytes, id };
}

export interface TreeEntry {
  name: string;
  mode: '100644' | '100755' | '40000';
  id: string;
}

/** A tree object: entries sorted as git sorts them (a directory as if its name ended with "/"). */
export function tree(entries: TreeEntry[]): GitObject {
  const key = (entry: TreeEntry) => (entry.mode === '40000' ? `${entry.name}/` : entry.name);
  const sorted = [...entries].sort((a, b) => Buffer.compare(Buffer.from(key(a)), Buffer.from(key(b))));
  const parts = sorted.flatMap((entry) => [Buffer.from(`${entry.mode} ${entry.name}\0`), Buffer.from(entry.id, 'hex')]);
  return gitObject('tree', Buffer.concat(parts));
}

export function commit(options: { tree: string; parents: string[]; message: string; time: number }): GitObject {
  const who = `Sandbox <sandbox@localhost> ${Math.floor(options.time / 1000)} +0000`;
  const lines = [`tree ${options.tree}`, ...options.parents.map((parent) => `parent ${parent}`), `author ${who}`, `committer ${who}`];
  return gitObject('commit', `${lines.join('\n')}\n\n${options.message}\n`);
}

/** `objects/ab/cdef…` and its zlib-compressed content. */
export function looseObject(object: GitObject): { path: string; data: Buffer } {
  const raw = Buffer.concat([Buffer.from(`${object.type} ${object.body.length}\0`), object.body]);
  return { path: `objects/${object.id.slice(0, 2)}/${object.id.slice(2)}`, data: deflateSync(raw) };
}

/** A pack of whole (undeltified) objects and its version 2 index, named as git names them. */
export function pack(objects: GitObject[]): { packPath: string; pack: Buffer; idxPath: string; idx: Buffer } {
  const parts: Buffer[] = [];
  const header = Buffer.alloc(12);
  header.write('PACK', 0, 'latin1');
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(objects.length, 8);
  parts.push(header);
  let offset = 12;
  const entries: { id: string; offset: number; crc: number }[] = [];
  for (const object of objects) {
    const entry = Buffer.concat([packEntryHeader(PACK_TYPE[object.type], object.body.length), deflateSync(object.body)]);
    entries.push({ id: object.id, offset, crc: crc32(entry) });
    parts.push(entry);
    offset += entry.length;
  }
  const body = Buffer.concat(parts);
  const checksum = createHash('sha1').update(body).digest();
  const packBytes = Buffer.concat([body, checksum]);

  entries.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const fanout = Buffer.alloc(256 * 4);
  for (let byte = 0, at = 0; byte < 256; byte++) {
    while (at < entries.length && parseInt((entries[at] as { id: string }).id.slice(0, 2), 16) <= byte) at++;
    fanout.writeUInt32BE(at, byte * 4);
  }
  const ids = Buffer.concat(entries.map((entry) => Buffer.from(entry.id, 'hex')));
  const crcs = Buffer.alloc(entries.length * 4);
  const offsets = Buffer.alloc(entries.length * 4);
  entries.forEach((entry, i) => {
    crcs.writeUInt32BE(entry.crc, i * 4);
    offsets.writeUInt32BE(entry.offset, i * 4);
  });
  const idxBody = Buffer.concat([Buffer.from([0xff, 0x74, 0x4f, 0x63, 0, 0, 0, 2]), fanout, ids, crcs, offsets, checksum]);
  const idx = Buffer.concat([idxBody, createHash('sha1').update(idxBody).digest()]);
  const name = `pack-${checksum.toString('hex')}`;
  return { packPath: `objects/pack/${name}.pack`, pack: packBytes, idxPath: `objects/pack/${name}.idx`, idx };
}

/** Type and size of a pack entry: 3 type bits and 4 size bits, then 7 size bits per byte. */
function packEntryHeader(type: number, size: number): Buffer {
  const bytes: number[] = [];
  let byte = (type << 4) | (size & 0x0f);
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    bytes.push(byte | 0x80);
    byte = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  bytes.push(byte);
  return Buffer.from(bytes);
}
