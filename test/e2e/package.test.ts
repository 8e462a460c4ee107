import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;

describe('the published package', () => {
  it('packs the built code, bin, completions, samples, the user docs and README only, and runs from an empty prefix', async () => {
    const out = mkdtempSync(join(tmpdir(), 'svc-pack-'));
    const { stdout } = await exec('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], { cwd: root });
    const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
    const files = packed!.files.map((f) => f.path);
    expect(files).toEqual(expect.arrayContaining(['bin/svc-migrate.js', 'dist/cli.js', 'completions/svc-migrate.bash', 'README.md', 'package.json']));
    // What runs: the bundle, its sandbox, its --version entry and its chunks, each with its source
    // map; none of the modules tsc emits beside them (the benchmarks' business).
    const dist = files.filter((f) => f.startsWith('dist/'));
    expect(dist.filter((f) => !/^dist\/cli(-[\w-]+)?\.js(\.map)?$/.test(f))).toEqual([]);
    expect(dist).toEqual(expect.arrayContaining(['dist/cli.js', 'dist/cli.js.map', 'dist/cli-sandbox.js', 'dist/cli-version.js']));
    for (const code of dist.filter((f) => f.endsWith('.js'))) expect(dist).toContain(`${code}.map`);
    expect(files).toContain('samples/webhook-payloads.json');
    // The inspector's page and archive view's site: each its one script and one stylesheet, from the package.
    expect(files.filter((f) => f.startsWith('web/')).sort()).toEqual(['web/inspector.css', 'web/inspector.js', 'web/site.css', 'web/site.js']);
    // The help and README point users at these pages; the developers' docs stay in the repository.
    expect(files.filter((f) => f.startsWith('docs/')).sort()).toEqual(['docs/cli.md', 'docs/sandbox.md', 'docs/service.md']);
    expect(files.filter((f) => /^(src|test|bench|scripts)\/|tsconfig|eslint|knip/.test(f))).toEqual([]);

    const prefix = mkdtempSync(join(tmpdir(), 'svc-prefix-'));
    // From the local cache where it holds the dependencies (npm ci filled it): the registry is asked only for what it lacks.
    await exec('npm', ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--omit=dev', '--prefer-offline', join(out, packed!.filename)]);
    const bin = join(prefix, 'node_modules', '.bin', 'svc-migrate');
    expect((await exec(bin, ['--version'])).stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect((await exec(bin, ['--help'])).stdout).toMatch(/Typical workflow/);
    expect((await exec(bin, ['completion', 'bash'])).stdout).toMatch(/^complete -F _svc_migrate svc-migrate$/m);
    expect((await exec(bin, ['webhook', 'events', '--json'])).stdout).toContain('"workflow_run"');
    // A download's sha256 is computed on the thread shipped as dist/cli-hash-worker.js.
    const archive = join(out, 'exported.tar.gz');
    const exported = await exec(bin, ['export', 'widgets', '--sandbox', '--output', archive, '--yes', '--interval', '1', '--json']);
    expect(JSON.parse(exported.stdout).archive.sha256).toBe(createHash('sha256').update(readFileSync(archive)).digest('hex'));
    // archive view loads markdown-it as installed, and copies the site's script and stylesheet as shipped.
    const site = join(out, 'site');
    expect(JSON.parse((await exec(bin, ['archive', 'view', archive, '-o', site, '--json'])).stdout).verified).toBe(true);
    expect(readFileSync(join(site, 'assets', 'site.js'), 'utf8')).toBe(readFileSync(join(root, 'web', 'site.js'), 'utf8'));
    expect(readFileSync(join(site, 'octo-org', 'widgets', 'issues', '1.html'), 'utf8')).toContain('<h2>Steps to reproduce</h2>');
    // The installed binary serves the inspector's page, script and stylesheet as shipped.
    const listener = spawn(bin, ['webhook', 'listen', '--port', '0', '--inspect'], { stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      let stderr = '';
      const page = await new Promise<string>((resolve, reject) => {
        listener.stderr.setEncoding('utf8').on('data', (chunk: string) => {
          stderr += chunk;
          const printed = /inspector on (\S+)/.exec(stderr);
          if (printed) resolve(printed[1]!);
        });
        listener.once('exit', (code) => reject(new Error(`listen exited ${code}: ${stderr}`)));
      });
      const token = new URL(page).search;
      expect(await (await fetch(page)).text()).toContain('<h1>Deliveries</h1>');
      for (const file of ['inspector.js', 'inspector.css']) {
        const served = await fetch(new URL(`/static/${file}${token}`, page));
        expect(served.status).toBe(200);
        expect(await served.text()).toBe(readFileSync(join(root, 'web', file), 'utf8'));
      }
    } finally {
      listener.kill('SIGKILL');
    }
    // --debug stack traces resolve through the map to the TypeScript sources (carried in the map).
    const map = JSON.parse(readFileSync(join(prefix, 'node_modules', 'svc-migrate', 'dist', 'cli.js.map'), 'utf8')) as {
      sources: string[];
      sourcesContent: string[];
    };
    expect(map.sources).toContain('../src/main.ts');
    expect(map.sourcesContent[map.sources.indexOf('../src/main.ts')]).toContain('export async function run(');
  }, 120_000);
});
