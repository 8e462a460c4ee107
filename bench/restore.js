// Benchmark: `archive restore` of the sandbox's archive of 50 repositories to file:// remotes,
// against the shell loop an owner writes without it (`tar xzf`, then one `git init --bare` and one
// `git push --mirror` per repository). Ours does more: it verifies the archive (git fsck) before
// pushing anything, and proves each remote with `git ls-remote`. Each run gets fresh targets; after
// each run of ours, its remotes' refs must equal the loop's (pull-request refs aside: ours leaves
// them out by default), or the suite fails.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, median, NODE, run, sandboxWithExport } from './lib.js';

const REPOSITORIES = 50;
const RUNS = Number(process.env.BENCH_RUNS ?? 5);

// Without `set -e` a failed push would pass unseen; an empty repository is the one push git refuses
// ("No refs in common and none specified"), so only a failure with refs to push stops the loop.
const LOOP = `archive=$1 unpacked=$2 targets=$3
set -e
mkdir -p "$unpacked" "$targets"
tar xzf "$archive" -C "$unpacked"
cd "$unpacked/repositories"
for repository in */*.git; do
  git init --bare -q "$targets/$repository"
  git -C "$repository" push -q --mirror "file://$targets/$repository" ||
    [ -z "$(git -C "$repository" for-each-ref --count=1)" ]
done
`;

export async function restoreBench({ runs = RUNS } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-restore-'));
  const archive = join(dir, 'org.tar.gz');
  const loopScript = join(dir, 'loop.sh');
  try {
    const names = Array.from({ length: REPOSITORIES }, (_, i) => `octo-org/repo-${String(i + 1).padStart(4, '0')}`);
    const { sandbox, location } = await sandboxWithExport({ repositories: REPOSITORIES }, names);
    try {
      await run(`curl -sS -o ${archive} '${location}'`);
    } finally {
      await sandbox.close();
    }
    writeFileSync(loopScript, LOOP);
    const inventory = await inventoryOf(archive, join(dir, 'inventory'));
    // Both read the archive from the page cache: one untimed read first, so neither pays for the disk.
    await run(`cat ${archive} > /dev/null`);

    // One untimed round of each side first: the first git and node processes read their binaries from the disk.
    const warm = join(dir, 'warm-up');
    mkdirSync(warm);
    const warmLoop = await timed('loop', `bash ${loopScript} ${archive} ${warm}/unpacked ${warm}/loop`);
    process.stderr.write(`  restore, untimed warm-up: the loop ${warmLoop.toFixed(0)} ms\n`);
    await timed('ours', restoreCommand(archive, warm));
    rmSync(warm, { recursive: true, force: true });

    const times = { loop: [], ours: [], verify: [] };
    const sides = ['loop', 'ours', 'verify'];
    for (let i = 0; i < runs; i++) {
      const round = join(dir, `run-${i + 1}`);
      const paths = { unpacked: join(round, 'unpacked'), loop: join(round, 'loop'), ours: join(round, 'ours') };
      mkdirSync(round);
      const commands = {
        loop: `bash ${loopScript} ${archive} ${paths.unpacked} ${paths.loop}`,
        ours: restoreCommand(archive, round),
        verify: `'${NODE}' ${BIN} archive verify ${archive} > /dev/null`,
      };
      for (const side of [...sides.slice(i % 3), ...sides.slice(0, i % 3)]) {
        const ms = await timed(side, commands[side]);
        times[side].push(ms);
        process.stderr.write(`  restore ${inventory.repositories} repositories, ${side}: ${ms.toFixed(0)} ms\n`);
      }
      checkReport(JSON.parse(readFileSync(join(round, 'ours.json'), 'utf8')), inventory);
      checkSameRefs(paths.loop, paths.ours, inventory);
      rmSync(round, { recursive: true, force: true });
    }
    const restore = median(times.ours);
    const what = `${inventory.repositories} repositories, ${inventory.wikis} wikis, ${inventory.refs} refs; ${inventory.empty} empty, ${inventory.withPullRefs} with pull refs`;
    return [
      {
        name: `archive restore of the sandbox's archive (${what}) to file:// remotes: verified, pushed, each remote proved by ls-remote`,
        ours: restore,
        baseline: median(times.loop),
        baselineName: 'tar xzf f -C x, then per repository: git init --bare t && git -C x/repositories/r push --mirror file://t',
        target: 1.0,
      },
      {
        name: 'of which the check before any push: archive verify of the same archive',
        ours: median(times.verify),
        baseline: restore,
        baselineName: 'archive restore (the row above)',
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Ours into `round/ours/<owner>/<repo>.git`, with a journal of its own (a journal shared by runs would skip proved repositories). */
function restoreCommand(archive, round) {
  return `'${NODE}' ${BIN} archive restore ${archive} --to 'file://${round}/ours/{owner}/{repo}.git' --journal ${round}/journal.json --json > ${round}/ours.json`;
}

/** Runs one side; ours names what failed (before `archive restore` exists in the build, it is that). */
async function timed(side, command) {
  try {
    return (await run(command)).ms;
  } catch (error) {
    if (side === 'loop') throw error;
    throw new Error(`the restore suite: ours failed (is \`archive restore\` in this build? npm run build):\n${error.message}`);
  }
}

/** What the archive holds, from an untimed unpacking: the row says what was restored. */
async function inventoryOf(archive, unpacked) {
  mkdirSync(unpacked);
  await run(`tar xzf ${archive} -C ${unpacked}`);
  const bare = bareRepositories(join(unpacked, 'repositories'));
  const inventory = { repositories: 0, wikis: 0, refs: 0, empty: 0, withPullRefs: 0 };
  for (const path of bare) {
    const refs = refsOf(join(unpacked, 'repositories', path));
    if (path.endsWith('.wiki.git')) inventory.wikis++;
    else inventory.repositories++;
    inventory.refs += refs.length;
    if (refs.length === 0) inventory.empty++;
    if (refs.some((line) => line.includes(' refs/pull/'))) inventory.withPullRefs++;
  }
  rmSync(unpacked, { recursive: true, force: true });
  return { ...inventory, bare };
}

/** `owner/repo.git` of every bare repository under `root`, sorted. */
function bareRepositories(root) {
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .flatMap((owner) => readdirSync(join(root, owner)).map((name) => `${owner}/${name}`))
    .filter((path) => path.endsWith('.git'))
    .sort();
}

/** `<id> <ref>` lines of a repository's refs, sorted by ref. */
function refsOf(repository) {
  const out = execFileSync('git', ['-C', repository, 'for-each-ref', '--format=%(objectname) %(refname)'], { encoding: 'utf8' });
  return out.split('\n').filter(Boolean);
}

/** Ours says it proved every repository of the archive (each wiki its own), and failed none. */
function checkReport(report, inventory) {
  const listed = report.repositories ?? [];
  const unproved = listed.filter((repository) => repository.state !== 'proved');
  if (report.failed !== 0 || unproved.length > 0 || listed.length !== inventory.bare.length) {
    const named = unproved.map((repository) => `${repository.name}: ${repository.state}${repository.error ? ` (${repository.error})` : ''}`);
    const counts = `${listed.length} repositories listed of ${inventory.bare.length}, ${report.failed} failed`;
    throw new Error(`the restore suite: archive restore did not prove every repository (${counts})\n${named.join('\n')}`);
  }
}

/** Every target of ours holds the refs the loop's same target holds, pull-request refs aside; else the suite fails. */
function checkSameRefs(loopRoot, oursRoot, inventory) {
  const problems = [];
  const loopTargets = bareRepositories(loopRoot);
  const oursTargets = bareRepositories(oursRoot);
  if (loopTargets.join('\n') !== inventory.bare.join('\n')) problems.push(`the loop made ${loopTargets.length} targets for ${inventory.bare.length} repositories`);
  for (const path of new Set([...loopTargets, ...oursTargets])) {
    if (!oursTargets.includes(path)) {
      problems.push(`${path}: no target of ours`);
      continue;
    }
    if (!loopTargets.includes(path)) {
      problems.push(`${path}: a target of ours the loop did not make`);
      continue;
    }
    const withoutPulls = (refs) => refs.filter((line) => !line.includes(' refs/pull/'));
    const loopRefs = withoutPulls(refsOf(join(loopRoot, path)));
    const oursRefs = refsOf(join(oursRoot, path));
    const missing = loopRefs.filter((line) => !oursRefs.includes(line));
    const extra = oursRefs.filter((line) => !loopRefs.includes(line));
    if (missing.length) problems.push(`${path}: the loop's target has, ours has not: ${missing.join(', ')}`);
    if (extra.length) problems.push(`${path}: ours has, the loop's target has not: ${extra.join(', ')}`);
  }
  if (problems.length) throw new Error(`the restore suite: ours' remotes differ from the loop's:\n${problems.slice(0, 20).join('\n')}`);
}
