import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SandboxOptions } from '../options.js';
import type { ArchiveStorage } from '../storage.js';
import type { AdminParts } from './admin.js';

/** What the API's routes reach into: the admin's parts, and the archive storage they register with. */
export interface ApiParts extends AdminParts {
  options: SandboxOptions;
  storage: ArchiveStorage;
  /** Where built archives are kept until the sandbox closes. */
  dataDir: string;
  /**
   * Answers JSON (http.ts#sendJson); with `conditional`, an If-None-Match that matches answers 304,
   * which gives the request back to the quota.
   */
  send: (response: ServerResponse, status: number, body: unknown, headers?: Record<string, string>, conditional?: IncomingMessage) => void;
}
