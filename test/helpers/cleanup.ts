import { afterEach } from 'vitest';
import { stopListeners } from './listener.js';
import { stopSandboxCommands } from './sandbox-command.js';
import { closeTestSandboxes } from './sandbox.js';
import { closeStorageStubs } from './storage-stub.js';
import { closeApiClients } from './api-client.js';
import { closeGitRemotes } from './git-remotes.js';

// A setup file, run for every test file: the helpers' modules are shared by the files of a worker
// (vitest.config.ts), so hooks registered where they are defined would serve only the first file.
afterEach(async () => {
  stopListeners();
  stopSandboxCommands();
  await closeTestSandboxes();
  await closeStorageStubs();
  await closeApiClients();
  await closeGitRemotes();
});
