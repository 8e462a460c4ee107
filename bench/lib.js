// Helpers shared by the benchmarks: medians, timing commands, peak memory, a sandbox to talk to.
import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Agent, fetch as undiciFetch } from 'undici';

export const BIN = fileURLToPath(new URL('../bin/svc-migrate.js', import.meta.url));

/**
 * The Node that runs what is measured (svc-migrate, the Node floors, Octokit): `--node PATH` on
 * bench/run.js's command line, else the one running the benchmarks. The sandbox and this harness
 * stay on the latter, so that runs on different Nodes face the same server.
 */
export let NODE = process.execPath;

/** `node bench/run.js --node PATH`: measure on that Node (run.js calls this before any suite). */
export function measureOn(path) {
  NODE = path;
}

/** The major version of the Node that runs what is measured. */
export function nodeVersion() {
  const result = spawnSync(NODE, ['-p', 'process.version'], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${NODE} -p process.version failed: ${result.stderr}`);
  return result.stdout.trim();
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Median wall time in ms of `command args` over `runs` runs, after one warm-up (synchronous: no server in this process). */
export function timeCommand(command, args, { runs = 15, env = process.env } = {}) {
  const once = () => {
    const started = process.hrtime.bigint();
    const result = spawnSync(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${result.stderr}`);
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  once();
  return median(Array.from({ length: runs }, once));
}

/** Runs a shell command without blocking this process (a sandbox may be serving from it); ms and peak RSS in MB. */
export function run(script, env = {}) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const format = 'peak-rss-kb %M minor-faults %R';
    execFile('/usr/bin/time', ['-f', format, 'bash', '-c', script], { env: { ...process.env, ...env }, maxBuffer: 1 << 30 }, (error, _stdout, stderr) => {
      if (error) return reject(new Error(`${script} failed: ${stderr}`));
      const [, kb, faults] = /peak-rss-kb (\d+) minor-faults (\d+)/.exec(stderr) ?? [];
      resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, rssMb: Number(kb) / 1024, faults: Number(faults) });
    });
  });
}

/** Median of `runs` measurements of an async function returning a number. */
export async function medianOf(runs, measure) {
  const values = [];
  for (let i = 0; i < runs; i++) values.push(await measure());
  return median(values);
}

/**
 * A sandbox with one exported migration of `repositories` (`widgets` unless named), its archive
 * built before anything is timed. With `tls`, both origins are HTTPS and `caFile` holds the
 * authority to trust (SVC_CA_FILE, curl's --cacert), as a user trusts an organization's own.
 */
export async function sandboxWithExport(options, repositories = ['octo-org/widgets']) {
  const { startSandbox } = await import('../dist/sandbox/server.js');
  const sandbox = await startSandbox({ exportSeconds: 0, ...options });
  const dispatcher = sandbox.ca ? new Agent({ connect: { ca: sandbox.ca.certificate } }) : new Agent();
  const fetch = (url, init = {}) => undiciFetch(url, { ...init, dispatcher });
  try {
    const auth = { authorization: `Bearer ${sandbox.ownerToken}` };
    const migration = await fetch(`${sandbox.baseUrl}/orgs/octo-org/migrations`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ repositories }),
    }).then((r) => r.json());
    await new Promise((resolve) => setTimeout(resolve, 50));
    const location = await fetch(`${sandbox.baseUrl}/orgs/octo-org/migrations/${migration.id}/archive`, { headers: auth, redirect: 'manual' }).then(
      (r) => r.headers.get('location'),
    );
    await fetch(location, { method: 'HEAD' }); // builds the archive before anything is timed
    const env = { SVC_BASE_URL: sandbox.baseUrl, SVC_TOKEN: sandbox.ownerToken, SVC_ORG: 'octo-org', ...(sandbox.ca ? { SVC_CA_FILE: sandbox.ca.file } : {}) };
    return { sandbox, id: migration.id, location, env, caFile: sandbox.ca?.file };
  } finally {
    await dispatcher.close();
  }
}
