// A floor of benchmark 2 on node:net, as the receiver is built: the least a verifying receiver does
// for each delivery (the HMAC compared in constant time, the body parsed as JSON, an answer), with
// answers sent together at the end of each turn, and nothing else: no checks of the request, no
// bounds, no deduplication, no output. It reads only well-formed requests with a Content-Length, as
// the load generator sends them. It prints its port, then serves until killed.
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:net';

const key = createSecretKey(Buffer.from(process.argv[2] ?? ''));
const END_OF_HEAD = Buffer.from('\r\n\r\n');
let answers = [];

function flush() {
  const batch = answers;
  answers = [];
  for (const [socket, text] of batch) socket.write(text);
}

function verified(head, body) {
  const signature = /^x-hub-signature-256: *sha256=([0-9a-f]{64})/im.exec(head)?.[1];
  if (!signature) return false;
  const expected = createHmac('sha256', key).update(body).digest();
  return timingSafeEqual(Buffer.from(signature, 'hex'), expected) && typeof JSON.parse(body.toString()) === 'object';
}

const server = createServer({ noDelay: true }, (socket) => {
  let received;
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk) => {
    received = received ? Buffer.concat([received, chunk]) : chunk;
    for (;;) {
      const end = received.indexOf(END_OF_HEAD);
      if (end < 0) return;
      const head = received.toString('latin1', 0, end);
      const length = Number(/^content-length: *(\d+)/im.exec(head)?.[1] ?? 0);
      if (received.length < end + 4 + length) return;
      const ok = verified(head, received.subarray(end + 4, end + 4 + length));
      received = received.length > end + 4 + length ? received.subarray(end + 4 + length) : undefined;
      if (answers.push([socket, `HTTP/1.1 ${ok ? '200 OK' : '401 Unauthorized'}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`]) === 1) {
        setImmediate(flush);
      }
      if (!received) return;
    }
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
