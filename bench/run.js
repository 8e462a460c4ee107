// `npm run bench`: runs every benchmark, prints a table and writes docs/benchmarks.md.
// Not part of `npm test`: it takes minutes and measures, it does not assert.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { downloadBench } from './download.js';
import { listingBench } from './listing.js';
import { orgExportBench } from './org-export.js';
import { pollingBench } from './polling.js';
import { receiverBench } from './receiver.js';
import { startupBench } from './startup.js';
import { verifyBench } from './verify.js';

const suites = {
  startup: startupBench,
  download: downloadBench,
  receiver: receiverBench,
  listing: listingBench,
  polling: pollingBench,
  verify: verifyBench,
  'org-export': orgExportBench,
};

// `node bench/run.js download startup` measures those suites again and replaces their rows; the
// page says when each suite was last measured (bench/results.json keeps every suite's rows).
const RESULTS = new URL('./results.json', import.meta.url);
const chosen = process.argv.slice(2);
for (const name of chosen) if (!suites[name]) throw new Error(`no suite ${name}: ${Object.keys(suites).join(', ')}`);
const machine = `${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}), Node ${process.version}`;
const results = chosen.length && existsSync(RESULTS) ? JSON.parse(readFileSync(RESULTS, 'utf8')) : {};
for (const [name, bench] of Object.entries(suites)) {
  if (chosen.length && !chosen.includes(name)) continue;
  process.stderr.write(`running ${name}…\n`);
  results[name] = { measured: new Date().toISOString().slice(0, 16).replace('T', ' '), machine, rows: await bench() };
}
const rows = Object.keys(suites).flatMap((name) => results[name]?.rows ?? []);

const format = (value, unit) =>
  unit === 'requests' || unit === 'faults' ? String(Math.round(value)) : value.toFixed(unit === 'MB' ? 0 : Math.abs(value) < 1 ? 2 : 1);
function verdict(row, ratio) {
  if (row.target === undefined && !row.absolute) return '—';
  let met = row.target === undefined || (row.higherIsBetter ? ratio >= row.target : ratio <= row.target);
  if (row.absolute) met = met && row.absolute.value < row.absolute.limit;
  return met ? 'yes' : '**no**';
}
const header = '| benchmark | ours | baseline | baseline value | ratio | target | met |\n|---|---|---|---|---|---|---|';
const lines = rows.map((row) => {
  // Equal figures are a ratio of 1, 0 ms against 0 ms included (latencies in whole ms).
  const ratio = row.ours === row.baseline ? 1 : row.ours / row.baseline;
  const unit = row.unit ?? 'ms';
  const limit = row.absolute ? `< ${row.absolute.limit} ${unit}` : '';
  const target =
    row.target === undefined ? limit || '—' : `${row.higherIsBetter ? '≥' : '≤'} ${row.target}${limit ? `, and ${limit}` : ''}`;
  return `| ${row.name} | ${format(row.ours, unit)} ${unit} | \`${row.baselineName}\` | ${format(row.baseline, unit)} ${unit} | ${ratio.toFixed(2)} | ${target} | ${verdict(row, ratio)} |`;
});
const table = [header, ...lines].join('\n');
process.stdout.write(`${table}\n\n${machine}\n`);

const machines = [...new Set(Object.values(results).map((result) => result.machine))];
const when = `${Object.entries(results).map(([name, { measured }]) => `${name} ${measured}`).join(', ')} (UTC), on ${machines.join(' and ')}`;
writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
const notes = readFileSync(new URL('./NOTES.md', import.meta.url), 'utf8');
writeFileSync(
  new URL('../docs/benchmarks.md', import.meta.url),
  `# Benchmarks

Written by \`npm run bench\`: each figure is a median of several runs, and each ratio is ours ÷ the
baseline measured in the same run. Suites measured: ${when}.

${table}

${notes}`,
);
