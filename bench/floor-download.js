// The floor of benchmark 1: the least a Node.js process does to save a download with undici, the
// client svc-migrate uses. The URL's body goes to the file with one writeSync per chunk: no API
// calls, checks, progress, resume state or fsync. Over HTTPS, the CA file names the authority to
// trust. Usage: node floor-download.js <url> <file> [ca.pem]
import { openSync, readFileSync, writeSync } from 'node:fs';
import { Writable } from 'node:stream';
import { Agent, stream } from 'undici';

const [url, path, caFile] = process.argv.slice(2);
const dispatcher = new Agent(caFile ? { connect: { ca: readFileSync(caFile, 'utf8') } } : {});
const fd = openSync(path, 'w');
let offset = 0;
await stream(url, { method: 'GET', dispatcher }, () =>
  new Writable({
    write(chunk, _encoding, callback) {
      offset += writeSync(fd, chunk, 0, chunk.length, offset);
      callback();
    },
  }),
);
await dispatcher.close();
