import { type Command, Argument } from 'commander';
import { API_VERSION } from '../api/types.js';
import type { Runner } from '../context.js';
import { UsageError } from '../errors.js';
import { examples } from './common/options.js';
import { checkedConfigValue, CONFIG_KEYS, type ConfigKey, openSettingsStore, readStoredSettings } from '../settings/store.js';

/** A setting's key in --json output: snake_case, as every key of the tool's JSON (`baseUrl` → `base_url`). */
const jsonKey = (key: ConfigKey) => key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

const keyArgument = () => new Argument('<key>', 'the setting').choices(CONFIG_KEYS);

export function register(program: Command, run: Runner): void {
  const config = program
    .command('config')
    .description('read and change stored settings: org, baseUrl, apiVersion, caFile')
    .addHelpText('after', examples(['svc-migrate config set org acme', 'svc-migrate config set baseUrl https://api.example.com', 'svc-migrate config list --json']));

  config
    .command('get')
    .addHelpText('after', examples(['svc-migrate config get org', 'svc-migrate config get baseUrl --json']))
    .description('print one stored setting')
    .addArgument(keyArgument())
    .action((key: ConfigKey, _options: unknown, command: Command) =>
      run(command, () => ({ key }), async (context) => {
        // A key with a default prints it, as the program would use it.
        const value = readStoredSettings(context.settings.configDir)[key] ?? (key === 'apiVersion' ? API_VERSION : undefined);
        if (value === undefined) throw new UsageError(`${key} is not set`, { hint: `svc-migrate config set ${key} <value>` });
        context.out.result({ [jsonKey(key)]: value }, () => value);
      }),
    );
  config
    .command('set')
    .addHelpText('after', examples(['svc-migrate config set org acme', 'svc-migrate config set apiVersion 2026-03-10', 'svc-migrate config set caFile ~/acme-ca.pem']))
    .description('store a setting')
    .addArgument(keyArgument())
    .argument('<value>', 'the value')
    .action((key: ConfigKey, value: string, _options: unknown, command: Command) =>
      run(
        command,
        // A CA file is read to be checked, when the command runs; every other value is checked now.
        () => ({ key, value: key === 'caFile' ? value : checkedConfigValue(key, value) }),
        async (context, setting) => {
          const store = await openSettingsStore(context.settings.configDir);
          store.set(setting.key, setting.key === 'caFile' ? checkedConfigValue(setting.key, setting.value) : setting.value);
          context.out.success(`${setting.key} set`);
        },
      ),
    );
  config
    .command('unset')
    .addHelpText('after', examples(['svc-migrate config unset baseUrl', 'svc-migrate config unset org']))
    .description('remove a stored setting')
    .addArgument(keyArgument())
    .action((key: ConfigKey, _options: unknown, command: Command) =>
      run(command, () => ({ key }), async (context) => {
        (await openSettingsStore(context.settings.configDir)).delete(key);
        context.out.success(`${key} unset`);
      }),
    );
  config
    .command('list')
    .addHelpText('after', examples(['svc-migrate config list', 'svc-migrate config list --json']))
    .description('print every stored setting (the token is never shown)')
    .action((_options: unknown, command: Command) =>
      run(command, () => ({}), async (context) => {
        const stored = readStoredSettings(context.settings.configDir);
        const keys = CONFIG_KEYS.filter((key) => stored[key] !== undefined);
        // Nothing stored: stdout stays empty (as an empty list is), and a note says why on stderr.
        if (keys.length === 0 && !context.out.json) context.out.info('nothing stored');
        // A human reads the names `config set` takes; a script the snake_case of every --json.
        context.out.result(Object.fromEntries(keys.map((key) => [jsonKey(key), stored[key]])), () => keys.map((key) => `${key}=${stored[key]}`).join('\n'));
      }),
    );
  config
    .command('path')
    .addHelpText('after', examples(['svc-migrate config path', 'cat "$(svc-migrate config path)"']))
    .description('print where the settings file is')
    .action((_options: unknown, command: Command) =>
      run(command, () => ({}), async (context) => {
        const path = `${context.settings.configDir}/config.json`;
        context.out.result({ path }, () => path);
      }),
    );
}
