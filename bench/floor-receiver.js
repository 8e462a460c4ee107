// The floor of benchmark 2: node:http reading each body and answering, with nothing verified or parsed.
// No receiver built on node:http can be faster; it prints its port, then serves until killed.
import { createServer } from 'node:http';

const server = createServer((request, response) => {
  request.on('data', () => {});
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': 2 });
    response.end('{}');
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
