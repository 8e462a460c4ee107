import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * `mkdir -p` with mode 0700 (private: settings, journals and saved deliveries), one level at a
 * time: Node's recursive mkdir loops for ever where the file system refuses new directories with
 * ENOENT (`/proc/x`). Errors are the system's, for `system-errors.ts` to word.
 */
export function makeDirectory(dir: string): void {
  const missing: string[] = [];
  let current = resolve(dir);
  for (;;) {
    try {
      if (statSync(current).isDirectory()) break;
      throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${current}'`), { code: 'ENOTDIR', syscall: 'mkdir', path: current });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    missing.push(current);
    const parent = dirname(current);
    if (parent === current) break;
    current = parent;
  }
  for (const path of missing.reverse()) mkdirSync(path, { mode: 0o700 });
}
