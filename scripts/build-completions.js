// Writes completions/ from the built program (`npm run completions` after changing commands or
// options); test/e2e/completion.test.ts fails while they are out of date.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const COMPLETION_FILES = { bash: 'svc-migrate.bash', zsh: '_svc-migrate', fish: 'svc-migrate.fish' };
const bin = fileURLToPath(new URL('../bin/svc-migrate.js', import.meta.url));

for (const [shell, name] of Object.entries(COMPLETION_FILES)) {
  const script = execFileSync(process.execPath, [bin, 'completion', shell], { encoding: 'utf8' });
  writeFileSync(new URL(`../completions/${name}`, import.meta.url), script);
}
process.stdout.write('wrote completions/\n');
