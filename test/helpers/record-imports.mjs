// Preloaded with `node --import` by the start-up test: appends every module URL the program
// resolves to the file named by RECORD_IMPORTS_TO (the hooks run on their own thread).
import { register } from 'node:module';

register(
  `data:text/javascript,${encodeURIComponent(`
import { appendFileSync } from 'node:fs';
const file = ${JSON.stringify(process.env.RECORD_IMPORTS_TO)};
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(file, result.url + '\\n');
  return result;
}`)}`,
);
