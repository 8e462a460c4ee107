import { InterruptedError } from '../../src/errors.js';
import { runCli } from './run-cli.js';

const controllers: AbortController[] = [];

/** Ends every `svc-migrate sandbox` a test left running (after each test: test/helpers/cleanup.ts). */
export function stopSandboxCommands(): void {
  for (const controller of controllers.splice(0)) controller.abort(new InterruptedError());
}

interface SandboxInfo {
  base_url: string;
  org: string;
  token: string;
  tokens: { kind: string }[];
}

/**
 * `svc-migrate sandbox --json …` in-process: its address record (the first line it prints), and
 * `stop()`, which is Ctrl-C and resolves with its exit code and stderr.
 */
export interface SandboxCommand {
  info: SandboxInfo;
  stop: () => Promise<{ code: number | null; stderr: string }>;
}

export async function sandboxCommand(args: string[]): Promise<SandboxCommand> {
  const controller = new AbortController();
  controllers.push(controller);
  let announce: (info: SandboxInfo) => void = () => {};
  const announced = new Promise<SandboxInfo>((resolve) => (announce = resolve));
  let stdout = '';
  const finished = runCli(['sandbox', '--json', ...args], {
    signal: controller.signal,
    onStdout: (text) => {
      stdout += text;
      const end = stdout.indexOf('\n');
      if (end >= 0) announce(JSON.parse(stdout.slice(0, end)) as SandboxInfo);
    },
  });
  const info = await Promise.race([announced, finished.then((result) => Promise.reject(new Error(`sandbox exited ${result.code}: ${result.stderr}`)))]);
  return {
    info,
    stop: async () => {
      controller.abort(new InterruptedError());
      const result = await finished;
      return { code: result.code, stderr: result.stderr };
    },
  };
}
