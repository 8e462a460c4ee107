/**
 * Whether a process of this pid runs on this machine: only "no such process" (ESRCH) says it does
 * not; another user's (EPERM) runs. A pid can be taken again after its process ended: callers that
 * must tell the two apart look further (org-export/lock.ts).
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
