// The floor of benchmark 2: node:http reading each body and answering, with nothing verified or parsed.
// No receiver built on node:http can be faster; it prints its port, then serves until killed.
// With a secret (`floor-receiver.js <secret>`), it also does the least any verifying receiver must
// do for each delivery: the HMAC of the body compared in constant time, and the body parsed as JSON.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const secret = process.argv[2];

function verified(request, body) {
  if (!secret) return true;
  const given = Buffer.from(String(request.headers['x-hub-signature-256']).slice('sha256='.length), 'hex');
  const expected = createHmac('sha256', secret).update(body).digest();
  return given.length === expected.length && timingSafeEqual(given, expected) && typeof JSON.parse(body.toString('utf8')) === 'object';
}

const server = createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const ok = verified(request, Buffer.concat(chunks));
    response.writeHead(ok ? 200 : 401, { 'content-type': 'application/json', 'content-length': 2 });
    response.end('{}');
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
