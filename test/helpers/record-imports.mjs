// Preloaded with `node --import` by the start-up tests: appends every module URL the program
// resolves to the file named by RECORD_IMPORTS_TO (the hooks run on their own thread), and at exit
// the path of every CommonJS module loaded with require (which those hooks do not see on Node 20).
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';

const file = process.env.RECORD_IMPORTS_TO;
register(
  `data:text/javascript,${encodeURIComponent(`
import { appendFileSync } from 'node:fs';
const file = ${JSON.stringify(file)};
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(file, result.url + '\\n');
  return result;
}`)}`,
);
const { cache } = createRequire(import.meta.url);
process.on('exit', () => appendFileSync(file, `${Object.keys(cache).join('\n')}\n`));
