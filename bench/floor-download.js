// The floor of benchmark 1: the least a Node.js process does to save a download with undici, the
// client svc-migrate uses. The URL's body goes to the file with one writeSync per chunk: no API
// calls, checks, progress, resume state or fsync. Usage: node floor-download.js <url> <file>
import { openSync, writeSync } from 'node:fs';
import { Writable } from 'node:stream';
import { stream } from 'undici';

const [url, path] = process.argv.slice(2);
const fd = openSync(path, 'w');
let offset = 0;
await stream(url, { method: 'GET' }, () =>
  new Writable({
    write(chunk, _encoding, callback) {
      offset += writeSync(fd, chunk, 0, chunk.length, offset);
      callback();
    },
  }),
);
