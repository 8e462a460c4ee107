// The baseline of benchmark 2: a minimal receiver built on @octokit/webhooks with the same secret.
// It prints its port, then serves until killed.
import { createServer } from 'node:http';
import { createNodeMiddleware, Webhooks } from '@octokit/webhooks';

const webhooks = new Webhooks({ secret: process.argv[2] ?? '' });
webhooks.onAny(() => {});
const server = createServer(createNodeMiddleware(webhooks, { path: '/' }));
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
