/**
 * The environment a child process inherits (the archive check's git needs PATH and the rest). The one
 * read of `process.env` outside the entry point: everything else gets the environment as `io.env`.
 */
export function childEnvironment(overrides: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, ...overrides };
}
