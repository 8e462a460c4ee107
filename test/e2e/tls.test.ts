import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { X509Certificate } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, runCli, spawnCli } from '../helpers/run-cli.js';
import { json, type ScriptedServer, startScriptedServer, startScriptedTlsServer } from '../helpers/scripted-server.js';
import { expiredCertificate, loopbackCertificate, sharedAuthority, testAuthority } from '../helpers/tls.js';

// HTTPS as users reach the service: the sandbox's --tls, --ca-file / SVC_CA_FILE / caFile on top of
// Node's own authorities (NODE_EXTRA_CA_CERTS included), and a certificate the tool cannot trust
// said in one line, never retried. What needs a process (a CA by environment, a certificate
// refused, the sandbox's start line) runs the built binary.

const TOKEN = 'ghp_tlsTestToken42';
const children: ChildProcess[] = [];
const servers: ScriptedServer[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function tlsServer(...args: Parameters<typeof startScriptedTlsServer>): Promise<ScriptedServer> {
  const server = await startScriptedTlsServer(...args);
  servers.push(server);
  return server;
}

const envFor = (server: ScriptedServer, extra: Record<string, string> = {}) => ({ SVC_BASE_URL: server.url, SVC_TOKEN: TOKEN, SVC_ORG: 'acme', ...extra });

/** `svc-migrate sandbox` as a process: its first `lines` lines of stdout, and the process. */
async function sandboxProcess(args: string[], lines: number): Promise<{ lines: string[] }> {
  const child = spawn(process.execPath, [BIN, 'sandbox', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const read: string[] = [];
  for await (const line of createInterface({ input: child.stdout })) {
    read.push(line);
    if (read.length === lines) break;
  }
  return { lines: read };
}

describe('svc-migrate sandbox --tls (the built binary)', () => {
  it('--json: its start line names the CA file; the API and the storage are HTTPS with a certificate for 127.0.0.1, ::1 and localhost from that CA', async () => {
    const { lines } = await sandboxProcess(['--tls', '--json', '--export-seconds', '0'], 1);
    const info = JSON.parse(lines[0]!);
    expect(info.base_url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(info.storage_origin).toMatch(/^https:\/\/localhost:\d+$/);
    const ca = new X509Certificate(readFileSync(info.ca_file));
    expect(ca.ca).toBe(true);

    // Trusted by SVC_CA_FILE alone, then by NODE_EXTRA_CA_CERTS, which Node reads as it starts.
    const env = { SVC_BASE_URL: info.base_url, SVC_TOKEN: info.token, SVC_ORG: info.org };
    for (const trust of [{ SVC_CA_FILE: info.ca_file }, { NODE_EXTRA_CA_CERTS: info.ca_file }]) {
      const listed = await spawnCli(['list', '--json'], { env: { ...env, ...trust } });
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout)[0].url).toMatch(/^https:\/\/127\.0\.0\.1:/);
    }
    // A whole export over HTTPS, the archive from storage on localhost.
    const dir = mkdtempSync(join(tmpdir(), 'svc-tls-'));
    const exported = await spawnCli(['export', 'widgets', '--output', join(dir, 'a.tar.gz'), '--yes', '--interval', '1', '--json'], {
      env: { ...env, SVC_CA_FILE: info.ca_file },
    });
    expect(exported.code, exported.stderr).toBe(0);
    expect(JSON.parse(exported.stdout).archive.verified).toBe(true);

    // Without it, the sandbox is as untrusted as any unknown authority.
    const refused = await spawnCli(['list'], { env });
    expect(refused.code).toBe(8);
    const host = new URL(info.base_url).host;
    expect(refused.stderr).toBe(
      `error: cannot trust the certificate of ${host}: it was issued by an authority this machine does not trust (UNABLE_TO_VERIFY_LEAF_SIGNATURE)\n` +
        'hint: if your organization has its own certificate authority, pass its certificate (PEM) with --ca-file FILE or SVC_CA_FILE, or store it with `svc-migrate config set caFile FILE`; no switch turns the certificate check off\n',
    );
  });

  it('on a terminal\'s first lines: where it listens, then the CA file, and the export line sets SVC_CA_FILE', async () => {
    const { lines } = await sandboxProcess(['--tls'], 16);
    expect(lines[0]).toMatch(/^sandbox listening on https:\/\/127\.0\.0\.1:\d+ \(archive storage on https:\/\/localhost:\d+\)$/);
    const file = /^CA certificate (\S+) \(trust it with --ca-file or SVC_CA_FILE; curl --cacert\)$/.exec(lines[1]!)?.[1];
    expect(file).toBeDefined();
    expect(readFileSync(file!, 'utf8')).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(lines.join('\n')).toContain(`SVC_CA_FILE=${file}`);
  });

  it('without --tls, stays plain HTTP and names no CA', async () => {
    const { lines } = await sandboxProcess(['--json'], 1);
    const info = JSON.parse(lines[0]!);
    expect(info.base_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(info).not.toHaveProperty('caFile');
  });
});

describe('a certificate the tool cannot trust (the built binary)', () => {
  it.each([
    ['expired', () => expiredCertificate(sharedAuthority()), 'it has expired (CERT_HAS_EXPIRED)', /must renew it/],
    ['for another name', () => sharedAuthority().issue({ names: ['api.example.test'] }), 'it is for other names (DNS:api.example.test) (ERR_TLS_CERT_ALTNAME_INVALID)', /use a --base-url with a name the certificate is for/],
    ['from an unknown authority', () => loopbackCertificate(testAuthority('unknown CA')), 'it was issued by an authority this machine does not trust (UNABLE_TO_VERIFY_LEAF_SIGNATURE)', /--ca-file FILE or SVC_CA_FILE/],
  ])('%s: one line naming the host and why, the hint, exit 8, and one connection only (never retried)', async (_name, certificate, reason, hint) => {
    const api = await tlsServer(certificate(), json(200, []));
    const result = await spawnCli(['list'], { env: envFor(api, { SVC_CA_FILE: sharedAuthority().file }) });
    expect(result.code).toBe(8);
    const [error, hintLine, ...rest] = result.stderr.trimEnd().split('\n');
    expect(error).toBe(`error: cannot trust the certificate of 127.0.0.1:${api.port}: ${reason}`);
    expect(hintLine).toMatch(/^hint: /);
    expect(hintLine).toMatch(hint);
    expect(hintLine).toMatch(/no switch turns the certificate check off/);
    expect(rest).toEqual([]);
    expect(result.stderr).not.toMatch(/this is a bug|retrying/);
    expect(api.requests).toHaveLength(0);
    expect(api.connections).toBe(1);
  });

  it('NODE_TLS_REJECT_UNAUTHORIZED=0, left set in a shell or a CI job, does not turn the check off: exit 8 and the token never sent', async () => {
    const api = await tlsServer(expiredCertificate(sharedAuthority()), json(200, []));
    const result = await spawnCli(['list'], { env: envFor(api, { SVC_CA_FILE: sharedAuthority().file, NODE_TLS_REJECT_UNAUTHORIZED: '0' }) });
    expect(result.code, result.stderr).toBe(8);
    expect(result.stderr).toContain(`error: cannot trust the certificate of 127.0.0.1:${api.port}: it has expired (CERT_HAS_EXPIRED)`);
    expect(api.requests).toHaveLength(0);
    // A signed delivery is refused the same way.
    const sent = await spawnCli(['webhook', 'send', '--url', api.url, '--event', 'ping', '--secret', 's3cret'], { env: { NODE_TLS_REJECT_UNAUTHORIZED: '0' } });
    expect(sent.code, sent.stderr).toBe(8);
    expect(sent.stderr).toContain('certificate has expired');
    expect(api.requests).toHaveLength(0);
  });

  it('a refusal Node has no code for (a SHA-1 signature: UNSPECIFIED) is still a certificate refused, not a network fault retried', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-sha1-'));
    const file = (name: string) => join(dir, name);
    const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
    openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', file('ca.key'), '-out', file('ca.pem'), '-days', '2', '-subj', '/CN=SHA-1 test CA');
    openssl('req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', file('leaf.key'), '-out', file('leaf.csr'), '-subj', '/CN=127.0.0.1');
    writeFileSync(file('leaf.ext'), 'subjectAltName=IP:127.0.0.1\n');
    openssl('x509', '-req', '-sha1', '-in', file('leaf.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial', '-out', file('leaf.pem'), '-extfile', file('leaf.ext'), '-days', '2');
    // node:https takes the certificate as its options: OpenSSL's default level would not let the server itself load a SHA-1 signature.
    const served = { key: readFileSync(file('leaf.key'), 'utf8'), cert: readFileSync(file('leaf.pem'), 'utf8'), ciphers: 'DEFAULT@SECLEVEL=0' };
    const api = await tlsServer(served, json(200, []));
    const result = await spawnCli(['list'], { env: envFor(api, { SVC_CA_FILE: file('ca.pem') }) });
    expect(result.code, result.stderr).toBe(8);
    expect(result.stderr).toMatch(new RegExp(`^error: cannot trust the certificate of 127\\.0\\.0\\.1:${api.port}: it was refused: CA signature digest algorithm too weak \\(UNSPECIFIED\\)\nhint: `));
    expect(result.stderr).not.toMatch(/retrying|tries/);
    expect(api.connections).toBe(1);
  });

  it('--json: the same error as one JSON line with code 8', async () => {
    const api = await tlsServer(expiredCertificate(sharedAuthority()), json(200, []));
    const result = await spawnCli(['list', '--json'], { env: envFor(api, { SVC_CA_FILE: sharedAuthority().file }) });
    expect(result.code).toBe(8);
    expect(JSON.parse(result.stderr).error).toMatchObject({ code: 8, status: null, message: `cannot trust the certificate of 127.0.0.1:${api.port}: it has expired (CERT_HAS_EXPIRED)` });
  });
});

describe('--ca-file adds to what Node trusts', () => {
  it('NODE_EXTRA_CA_CERTS keeps working beside --ca-file, and --ca-file beside it', async () => {
    const first = testAuthority('first CA');
    const second = testAuthority('second CA');
    for (const [served, extra, file] of [
      [first, first, second],
      [second, first, second],
    ] as const) {
      const api = await tlsServer(loopbackCertificate(served), json(200, []));
      const result = await spawnCli(['list', '--ca-file', file.file], { env: envFor(api, { NODE_EXTRA_CA_CERTS: extra.file }) });
      expect(result.code, result.stderr).toBe(0);
    }
  });

  it('takes a file of several certificates, from the flag, SVC_CA_FILE or the stored caFile (kept as an absolute path)', async () => {
    const authority = testAuthority();
    const bundle = join(mkdtempSync(join(tmpdir(), 'svc-ca-bundle-')), 'bundle.pem');
    writeFileSync(bundle, `${testAuthority('another').certificate}\n# a comment between them\n${authority.certificate}`);
    const api = await tlsServer(loopbackCertificate(authority), json(200, []));
    expect((await runCli(['list'], { env: envFor(api) })).code).toBe(8);
    expect((await runCli(['list', '--ca-file', bundle], { env: envFor(api) })).code).toBe(0);
    expect((await runCli(['list'], { env: envFor(api, { SVC_CA_FILE: bundle }) })).code).toBe(0);

    const configDir = mkdtempSync(join(tmpdir(), 'svc-ca-config-'));
    const relative = await runCli(['config', 'set', 'caFile', 'bundle.pem'], { env: { SVC_CONFIG_DIR: configDir } });
    expect(relative.code).toBe(2);
    expect(relative.stderr).toMatch(/cannot read bundle\.pem \(caFile\): no such file/);
    expect((await runCli(['config', 'set', 'caFile', bundle], { env: { SVC_CONFIG_DIR: configDir } })).code).toBe(0);
    expect((await runCli(['config', 'get', 'caFile'], { env: { SVC_CONFIG_DIR: configDir } })).stdout.trim()).toBe(bundle);
    expect((await runCli(['list'], { env: envFor(api, { SVC_CONFIG_DIR: configDir }) })).code).toBe(0);
  });

  it('a hint\'s command repeats --ca-file as given', async () => {
    const authority = testAuthority();
    const api = await tlsServer(loopbackCertificate(authority), json(404, { message: 'Not Found' }));
    const result = await runCli(['status', '7', '--ca-file', authority.file], { env: envFor(api) });
    expect(result.code).toBe(4);
    expect(result.stderr).toContain(`--ca-file ${authority.file}`);
  });

  it('--insecure says it changes nothing over HTTPS', async () => {
    const api = await tlsServer(loopbackCertificate(sharedAuthority()), json(200, []));
    const result = await runCli(['list', '--insecure', '--ca-file', sharedAuthority().file], { env: envFor(api) });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('warning: --insecure changes nothing over HTTPS: certificates are always checked (--ca-file adds an authority to trust)');
  });
});

describe('a CA file that is not one: exit 2 before any request', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bad-ca-'));
  const der = join(dir, 'ca.der');
  writeFileSync(der, new X509Certificate(sharedAuthority().certificate).raw);
  const damaged = join(dir, 'damaged.pem');
  writeFileSync(damaged, '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n');
  const text = join(dir, 'notes.txt');
  writeFileSync(text, 'the CA is on the wiki\n');

  it.each([
    ['missing', ['--ca-file', join(dir, 'nothing.pem')], {}, `cannot read ${join(dir, 'nothing.pem')} (--ca-file): no such file`],
    ['a directory', [], { SVC_CA_FILE: dir }, `cannot read ${dir} (SVC_CA_FILE): ${dir} is a directory`],
    ['not PEM', ['--ca-file', text], {}, `${text} (--ca-file) holds no certificate in PEM form (-----BEGIN CERTIFICATE-----)`],
    ['DER', ['--ca-file', der], {}, `${der} (--ca-file) holds no certificate in PEM form`],
    ['a PEM block that is no certificate', ['--ca-file', damaged], {}, `the certificate in ${damaged} (--ca-file) cannot be read`],
  ])('%s', async (name, args, env, message) => {
    const api = await startScriptedServer(json(200, []));
    servers.push(api);
    const result = await runCli(['list', ...args], { env: envFor(api, env) });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`error: ${message}`);
    if (name === 'DER') expect(result.stderr).toContain(`hint: it looks like a DER certificate: \`openssl x509 -inform der -in ${der} -out ca.pem\``);
    expect(api.requests).toHaveLength(0);
  });

  it('a FIFO no one writes to, or a device: refused at once (through the binary: opening one must not block it)', async () => {
    const fifo = join(dir, 'ca.fifo');
    execFileSync('mkfifo', [fifo]);
    for (const file of [fifo, '/dev/zero']) {
      const api = await startScriptedServer(json(200, []));
      servers.push(api);
      const result = await spawnCli(['list', '--ca-file', file], { env: envFor(api), timeoutMs: 10_000 });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`error: ${file} (--ca-file) is not a regular file`);
      expect(api.requests).toHaveLength(0);
    }
  });

  const root = process.getuid?.() === 0;
  it.skipIf(root)(`unreadable (through the binary, by environment)${root ? ' (skipped: root reads any file)' : ''}`, async () => {
    const locked = join(dir, 'locked.pem');
    writeFileSync(locked, sharedAuthority().certificate, { mode: 0o000 });
    const api = await startScriptedServer(json(200, []));
    servers.push(api);
    const result = await spawnCli(['list'], { env: envFor(api, { SVC_CA_FILE: locked }) });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`error: cannot read ${locked} (SVC_CA_FILE): permission denied`);
    expect(api.requests).toHaveLength(0);
  });
});

it('https:// to a server that speaks plain HTTP: the handshake failed, said once, exit 8, not retried', async () => {
  const api = await startScriptedServer(json(200, []));
  servers.push(api);
  const result = await runCli(['list'], { env: envFor(api, { SVC_BASE_URL: api.url.replace('http:', 'https:') }) });
  expect(result.code).toBe(8);
  expect(result.stderr).toMatch(new RegExp(`^error: the TLS handshake with 127\\.0\\.0\\.1:${api.port} failed \\(ERR_SSL_\\w+\\)\nhint: check that --base-url is the service's HTTPS address`));
  expect(api.connections).toBe(1);
});

describe('the archive storage\'s certificate', () => {
  it('refused: the download stops at once, exit 8, naming the storage host; the .part stays to resume', async () => {
    const authority = sharedAuthority();
    const storage = await tlsServer(authority.issue({ names: ['storage.example.test'] }), (_request, response) => response.writeHead(200).end('x'));
    const api = await tlsServer(loopbackCertificate(authority), (request, response) => {
      if (request.url.endsWith('/archive')) return response.writeHead(302, { location: `${storage.url}/a.tar.gz?sig=1` }).end();
      json(200, { id: 7, guid: '0b989ba4-242f-11e5-81e1-c7b6966d2516', state: 'exported', repositories: [] })(request, response, undefined as never);
    });
    const dir = mkdtempSync(join(tmpdir(), 'svc-tls-storage-'));
    const result = await runCli(['download', '7', '-o', join(dir, 'a.tar.gz')], { env: envFor(api, { SVC_CA_FILE: authority.file }) });
    expect(result.code).toBe(8);
    expect(result.stderr).toContain(`error: cannot trust the certificate of 127.0.0.1:${storage.port}: it is for other names (DNS:storage.example.test) (ERR_TLS_CERT_ALTNAME_INVALID)`);
    expect(result.stderr).toContain('hint: report it to the service\'s operator (the archive storage it sends downloads to)');
    expect(storage.connections).toBe(1);
  });
});

// Plain HTTP on loopback, as the tests that script an API on node:http run it, needs no CA.
it('plain HTTP on loopback still needs no CA', async () => {
  const api = await startScriptedServer(json(200, []));
  servers.push(api);
  expect((await runCli(['list'], { env: envFor(api) })).code).toBe(0);
});
