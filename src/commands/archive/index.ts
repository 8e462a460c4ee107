import type { Command } from 'commander';
import type { Runner } from '../../context.js';
import { examples } from '../common/options.js';
import { register as registerExtract } from './extract.js';
import { register as registerInspect } from './inspect.js';
import { register as registerRestore } from './restore.js';
import { register as registerVerify } from './verify.js';
import { register as registerView } from './view.js';

export function register(program: Command, run: Runner): void {
  const archive = program
    .command('archive')
    .description('check, look into, extract, restore or read (as a site) a downloaded migration archive')
    .addHelpText(
      'after',
      examples([
        'svc-migrate archive verify migration-4242.tar.gz',
        'svc-migrate archive inspect migration-4242.tar.gz',
        'svc-migrate archive extract migration-4242.tar.gz acme-repositories/',
        'svc-migrate archive restore migration-4242.tar.gz --to \'ssh://git@git.example.com/{owner}/{repo}.git\'',
        'svc-migrate archive view migration-4242.tar.gz -o acme-site/',
      ]),
    );
  for (const register of [registerVerify, registerInspect, registerExtract, registerRestore, registerView]) register(archive, run);
}
