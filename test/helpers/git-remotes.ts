import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Real git remotes on loopback for the restore tests, and an oracle of refs that shares nothing with
// the product: plain git and the system's tar. Every git run here has the machine's and the user's
// configuration shut out (GIT_CONFIG_NOSYSTEM, HOME in a directory of its own), so an insteadOf or
// a hooksPath on the machine cannot make a test pass or fail. Servers started here end after each
// test (test/helpers/cleanup.ts), or sooner by their close().

let home: string | undefined;

/** The environment of every git the helpers run: PATH, and nothing of the machine's configuration. */
function gitEnv(extra: Record<string, string> = {}): Record<string, string> {
  home ??= mkdtempSync(join(tmpdir(), 'svc-git-remotes-home-'));
  return { PATH: process.env.PATH ?? '', HOME: home, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C', ...extra };
}

const tempDir = (prefix: string) => mkdtempSync(join(tmpdir(), `svc-git-remotes-${prefix}-`));

/** Runs git (an identity and a default branch given, for commits) and resolves its stdout; rejects with its stderr. */
export function runGit(args: string[], cwd?: string): Promise<string> {
  const all = ['-c', 'user.name=Test', '-c', 'user.email=test@localhost', '-c', 'init.defaultBranch=main', ...args];
  return new Promise((resolve, reject) => {
    execFile('git', all, { cwd, env: gitEnv(), maxBuffer: 64 << 20, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`git ${args.join(' ')} failed: ${stderr || error.message}`));
      else resolve(stdout);
    });
  });
}

const stoppers: (() => Promise<void>)[] = [];

/** Stops every daemon and HTTP server a test left running (after each test: test/helpers/cleanup.ts). */
export async function closeGitRemotes(): Promise<void> {
  await Promise.all(stoppers.splice(0).map((stop) => stop()));
}

/** Registers `stop` to run after the test, and returns a close() that runs it once, now. */
function stoppable(stop: () => Promise<void>): () => Promise<void> {
  let stopped: Promise<void> | undefined;
  const once = () => (stopped ??= stop());
  stoppers.push(once);
  return once;
}

/** Empty bare repositories `root/<name>` (a name such as `acme/widgets.git`), for hosts that need one before a push. */
export async function bareRemotes(root: string, names: string[]): Promise<string[]> {
  const paths = names.map((name) => join(root, name));
  for (const path of paths) {
    mkdirSync(path, { recursive: true });
    await runGit(['init', '-q', '--bare', path]);
  }
  return paths;
}

/** A port free on 127.0.0.1 a moment ago: git daemon takes no port 0, so the caller retries if it is taken since. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface GitServer {
  /** The base URL, ending with `/`: a repository `acme/r.git` under the root is `${url}acme/r.git`. */
  url: string;
  close: () => Promise<void>;
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

const BIND_FAILED = /Address already in use|unable to allocate any listen sockets/;
const DAEMON_TRIES = 5;

/**
 * `git daemon` serving every repository under `root` on 127.0.0.1, pushes allowed
 * (`--enable=receive-pack`), resolved once it says it is ready; stopped by close() or after the test.
 */
export async function gitDaemon(root: string): Promise<GitServer> {
  let said = '';
  for (let attempt = 1; attempt <= DAEMON_TRIES; attempt++) {
    const port = await freePort();
    const child = spawn('git', ['daemon', '--reuseaddr', '--export-all', '--enable=receive-pack', `--base-path=${root}`,
      '--listen=127.0.0.1', `--port=${port}`, '--verbose', root], { env: gitEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
    said = '';
    let listening = false;
    const ready = await new Promise<boolean>((resolve, reject) => {
      // Read to the end (a full pipe would stall the daemon), kept only until it is ready.
      child.stderr.setEncoding('utf8').on('data', (text: string) => {
        if (listening) return;
        said += text;
        if (said.includes('Ready to rumble')) resolve((listening = true));
      });
      child.once('error', reject);
      child.once('exit', () => resolve(false));
    });
    if (ready) {
      const close = stoppable(async () => {
        child.kill('SIGTERM');
        await exited(child);
      });
      return { url: `git://127.0.0.1:${port}/`, close };
    }
    if (!BIND_FAILED.test(said)) break;
  }
  throw new Error(`git daemon did not start: ${said}`);
}

/** A request the smart HTTP server answered: what git sent, for tests that must know a path was taken. */
export interface HttpRequestSeen {
  method: string;
  url: string;
  contentEncoding: string | undefined;
  chunked: boolean;
  status: number;
}

/** The CGI environment of one request (RFC 3875), every request header as `HTTP_*`, as web servers pass them. */
function cgiEnv(root: string, request: IncomingMessage, url: URL): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) env[`HTTP_${name.toUpperCase().replace(/-/g, '_')}`] = Array.isArray(value) ? value.join(', ') : value;
  }
  Object.assign(env, {
    GIT_PROJECT_ROOT: root,
    GIT_HTTP_EXPORT_ALL: '1',
    // http-backend allows receive-pack only to an authenticated user.
    REMOTE_USER: 'tester',
    REMOTE_ADDR: '127.0.0.1',
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: 'HTTP/1.1',
    REQUEST_METHOD: request.method ?? 'GET',
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.slice(1),
    CONTENT_TYPE: request.headers['content-type'] ?? '',
  });
  // Without CONTENT_LENGTH (a chunked body) http-backend reads the body to its end.
  if (request.headers['content-length'] !== undefined) env.CONTENT_LENGTH = request.headers['content-length'];
  return gitEnv(env);
}

/** Where a CGI answer's headers end: after the first empty line. */
function headerEnd(bytes: Buffer): { at: number; length: number } | undefined {
  const crlf = bytes.indexOf('\r\n\r\n');
  const lf = bytes.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { at: crlf, length: 4 };
  return lf >= 0 ? { at: lf, length: 2 } : undefined;
}

interface CgiServer {
  root: string;
  children: Set<ChildProcess>;
  requests: HttpRequestSeen[];
}

function serveCgi({ root, children, requests }: CgiServer, request: IncomingMessage, response: ServerResponse): void {
  const url = new URL(request.url ?? '/', 'http://127.0.0.1');
  const child = spawn('git', ['http-backend'], { env: cgiEnv(root, request, url), stdio: ['pipe', 'pipe', 'pipe'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  const record: HttpRequestSeen = {
    method: request.method ?? '',
    url: request.url ?? '',
    contentEncoding: request.headers['content-encoding'],
    chunked: /chunked/i.test(request.headers['transfer-encoding'] ?? ''),
    status: 0,
  };
  requests.push(record);
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  // The backend may answer (an error) before reading the whole body: what it leaves unread is dropped.
  child.stdin.on('error', () => {});
  request.pipe(child.stdin);

  let head = Buffer.alloc(0);
  let headersSent = false;
  child.stdout.on('data', (chunk: Buffer) => {
    if (headersSent) {
      response.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = headerEnd(head);
    if (!end) return;
    let status = 200;
    let statusText: string | undefined;
    const headers: Record<string, string> = {};
    for (const line of head.subarray(0, end.at).toString('latin1').split(/\r?\n/)) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') {
        status = Number.parseInt(value, 10);
        statusText = value.replace(/^\d+\s*/, '') || undefined;
      } else headers[name] = value;
    }
    record.status = status;
    response.writeHead(status, statusText, headers);
    headersSent = true;
    const rest = head.subarray(end.at + end.length);
    if (rest.length > 0) response.write(rest);
  });
  child.stdout.on('end', () => {
    if (!headersSent) {
      record.status = 502;
      response.writeHead(502, { 'content-type': 'text/plain' });
      response.end(`git http-backend gave no answer: ${stderr}`);
    } else response.end();
  });
  response.on('close', () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
}

/**
 * Smart HTTP: a node:http server on 127.0.0.1 that runs `git http-backend` as a CGI for every
 * request, for every repository under `root`, pushes allowed; `requests` lists what it answered.
 */
export async function smartHttp(root: string): Promise<GitServer & { requests: HttpRequestSeen[] }> {
  const children = new Set<ChildProcess>();
  const requests: HttpRequestSeen[] = [];
  const server = createHttpServer((request, response) => serveCgi({ root, children, requests }, request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (!address || typeof address !== 'object') throw new Error('the smart HTTP server has no port');
  const close = stoppable(async () => {
    const closed = new Promise((resolve) => server.close(resolve));
    server.closeAllConnections();
    for (const child of children) child.kill('SIGKILL');
    await Promise.all([closed, ...[...children].map(exited)]);
  });
  return { url: `http://127.0.0.1:${address.port}/`, close, requests };
}

const shellQuoted = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * Makes the bare repository `bareRepo` refuse any push that creates, updates or deletes `ref`,
 * saying `message` on stderr (which git relays to the pusher as `remote: <message>`). It is an
 * `update` hook, run once per ref: the push's other refs still land, as a protected branch behaves.
 * (A `pre-receive` hook that exits non-zero refuses the whole push instead.)
 */
export function refusingHook(bareRepo: string, ref: string, message: string): void {
  const hooks = join(bareRepo, 'hooks');
  mkdirSync(hooks, { recursive: true });
  const path = join(hooks, 'update');
  writeFileSync(path, `#!/bin/sh\nif [ "$1" = ${shellQuoted(ref)} ]; then\n  printf '%s\\n' ${shellQuoted(message)} >&2\n  exit 1\nfi\nexit 0\n`);
  chmodSync(path, 0o755);
}

/** `<id> <ref>` lines (ls-remote's tab or for-each-ref's space) as ref → id, under `refs/` only, no peeled `^{}` line. */
function refMap(listing: string): Map<string, string> {
  const refs = new Map<string, string>();
  for (const line of listing.split('\n')) {
    const match = /^([0-9a-f]{40,64})[\t ](refs\/\S+)$/.exec(line);
    if (match && !match[2]!.endsWith('^{}')) refs.set(match[2]!, match[1]!);
  }
  return refs;
}

/** The refs of the remote at `url` as plain `git ls-remote` lists them: ref → id, under `refs/` only (no HEAD, no `^{}`). */
export async function lsRemote(url: string): Promise<Map<string, string>> {
  return refMap(await runGit(['ls-remote', url]));
}

/** The refs of the bare repository at `gitDir`, as `git for-each-ref` lists them: ref → id. */
export async function gitDirRefs(gitDir: string): Promise<Map<string, string>> {
  return refMap(await runGit(['--git-dir', gitDir, 'for-each-ref', '--format=%(objectname) %(refname)']));
}

/** The archive extracted by the system's `tar xzf` into a directory of its own. */
export async function untarred(archivePath: string): Promise<string> {
  const dir = tempDir('untarred');
  await new Promise<void>((resolve, reject) => {
    execFile('tar', ['xzf', archivePath, '-C', dir], { env: gitEnv() }, (error, _stdout, stderr) =>
      error ? reject(new Error(`tar xzf ${archivePath} failed: ${stderr || error.message}`)) : resolve());
  });
  return dir;
}

/**
 * The refs of every repository of a migration archive, read without the product: `tar xzf`, then
 * `git for-each-ref` in each `repositories/<owner>/<repo>.git`. Keyed `owner/repo` (a wiki is
 * `owner/repo.wiki`); a repository without refs maps to an empty map.
 */
export async function archiveRefs(archivePath: string): Promise<Map<string, Map<string, string>>> {
  const top = join(await untarred(archivePath), 'repositories');
  const repositories = new Map<string, Map<string, string>>();
  for (const owner of readdirSync(top).sort()) {
    for (const entry of readdirSync(join(top, owner)).sort()) {
      if (!entry.endsWith('.git')) continue;
      repositories.set(`${owner}/${entry.slice(0, -'.git'.length)}`, await gitDirRefs(join(top, owner, entry)));
    }
  }
  return repositories;
}
