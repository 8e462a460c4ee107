import type { ChildProcess } from 'node:child_process';
import { watch } from 'node:fs';

/**
 * Resolves once `ready()` holds, looked at now and again at each change fs.watch reports in `dir`
 * (a name added, removed or written): a wait on the file system's events, not on a timer. With
 * `signal`, aborting it stops the watch (and rejects).
 */
export function untilInDirectory(dir: string, ready: () => boolean, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const watcher = watch(dir, signal ? { signal } : {});
    const look = () => {
      if (!ready()) return;
      watcher.close();
      resolve();
    };
    watcher.on('change', look).on('error', (error) => {
      watcher.close();
      reject(error);
    });
    signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    look();
  });
}

/**
 * Resolves once `check()` holds, looked at again at each change in `dir`; rejects if `child` ends
 * first (naming its exit code, `what` was awaited and what it wrote on stderr, when piped) or
 * `check` throws.
 */
export function untilChildWrites(check: () => boolean, dir: string, child: ChildProcess, what: string): Promise<void> {
  let said = '';
  child.stderr?.setEncoding('utf8').on('data', (text: string) => (said += text));
  return new Promise((resolve, reject) => {
    const watcher = watch(dir);
    const onExit = (code: number | null) => settle(new Error(`the export ended (${code}) before ${what}${said ? `; it said:\n${said}` : ''}`));
    function settle(error?: Error) {
      watcher.close();
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve();
    }
    const look = () => {
      try {
        if (check()) settle();
      } catch (error) {
        settle(error as Error);
      }
    };
    watcher.on('change', look).on('error', settle);
    child.once('exit', onExit);
    look();
  });
}
