import { readFileSync } from 'node:fs';
import { PACKAGE_ROOT } from './package-root.js';

interface PackageInfo {
  name: string;
  version: string;
}

// Read at run time rather than bundled so the published package has one source of truth.
const info = JSON.parse(readFileSync(new URL('package.json', PACKAGE_ROOT), 'utf8')) as PackageInfo;

export const VERSION = info.version;
export const USER_AGENT = `${info.name}/${info.version}`;
