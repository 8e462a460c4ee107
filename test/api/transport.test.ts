import { createHash, randomBytes } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ResponseBody } from '../../src/api/response-body.js';
import { Agent, request, stream } from '../../src/api/undici.js';
import { type ScriptedServer, startScriptedServer } from '../helpers/scripted-server.js';

const servers: ScriptedServer[] = [];
const dispatchers: Dispatcher[] = [];

afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((dispatcher) => dispatcher.close()));
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function server(...handlers: Parameters<typeof startScriptedServer>): Promise<ScriptedServer> {
  const started = await startScriptedServer(...handlers);
  servers.push(started);
  return started;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe('a download\'s body (ResponseBody)', () => {
  it('hands over chunks a consumer may keep: no later read overwrites them, whatever the consumer returns', async () => {
    // A consumer that keeps every chunk, uncopied, and returns nothing: the file writer's shape. Were
    // the memory of a chunk read into again once its consumer returned, the kept bytes would change.
    const parts = [randomBytes(6 << 20), randomBytes(3 << 20)];
    const api = await server((request, response) => {
      const part = parts[Number(request.url?.slice(1))]!;
      response.writeHead(200, { 'content-length': part.length }).end(part);
    });
    const agent = new Agent();
    dispatchers.push(agent);
    const kept: Buffer[][] = [];
    for (const n of [0, 1]) {
      const chunks: Buffer[] = [];
      kept.push(chunks);
      await new Promise<void>((resolve, reject) => {
        stream(new URL(`${api.url}/${n}`), { method: 'GET', dispatcher: agent }, () => {
          const body = new ResponseBody();
          body.readInto((chunk) => void chunks.push(chunk)).then(resolve, reject);
          return body;
        }).catch(reject);
      });
    }
    expect(kept.map((chunks) => sha256(Buffer.concat(chunks)))).toEqual(parts.map(sha256));
  });
});

describe('undici through its public entry', () => {
  it('request() without a dispatcher goes through an agent of its own', async () => {
    const api = await server((_request, response) => response.writeHead(200).end('ok'));
    const response = await request(new URL(`${api.url}/`), { method: 'GET' });
    expect(await response.body.text()).toBe('ok');
  });
});
