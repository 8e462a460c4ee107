import { existsSync } from 'node:fs';

/**
 * The package's own directory, where the files shipped beside the code live (package.json,
 * samples/, web/): the nearest directory above this module that holds a package.json. This module
 * runs from src/support/ (tests), dist/support/ (tsc's output) and dist/cli*.js (the bundle), at a
 * different depth in each, so it looks rather than counts `../`.
 */
function findPackageRoot(): URL {
  for (let directory = new URL('./', import.meta.url); ; directory = new URL('../', directory)) {
    if (existsSync(new URL('package.json', directory))) return directory;
    if (directory.pathname === '/') throw new Error(`no package.json above ${import.meta.url}`);
  }
}

export const PACKAGE_ROOT = findPackageRoot();
