/**
 * Flags declared once, as typed tables (vitest's `cli-config.ts` is the model): the tables and their builders are
 * src/engine/flag-table.ts's (a flag that fills a run spec's field says so there, once); here they are registered
 * with commander. The command's flag type is inferred from its table (`FlagsOf<typeof TABLE>`).
 */
import { type Command, Option } from 'commander';
import { choicesOf, descriptionOf, type FlagTable } from '../engine/flag-table.js';

export {
  type Always,
  bootstrapFlag,
  choice,
  count,
  custom,
  dataFlag,
  decimal,
  type Flag,
  type FlagsOf,
  type FlagTable,
  fileGoldFlag,
  goldDirFlag,
  jsonFlag,
  type Maybe,
  many,
  on,
  proxyFlag,
  seedFlag,
  tasksFlag,
  text,
  textOrOff,
  to,
} from '../engine/flag-table.js';

/**
 * Registers a table on a command, with the `--quiet` every command takes; a key that is not the flag's own
 * camel-cased name is a bug, caught here. The program is built for each command line (./program.ts), so choices and
 * descriptions read from a registry are as the registry stands when the line is parsed.
 */
export function addFlags(cmd: Command, table: FlagTable): Command {
  // Switches and repeatable flags start off and empty; said in help only where it says something.
  const quiet: [string, unknown][] = [];
  for (const [key, spec] of Object.entries(table)) {
    const option = new Option(spec.flag, descriptionOf(spec));
    if (option.attributeName() !== key)
      throw new Error(
        `flag table of ${cmd.name()}: "${key}" is named "${option.attributeName()}" by ${spec.flag}`,
      );
    // Read now, as each command line is parsed: a provider registered at run time is among `--provider`'s.
    const choices = choicesOf(spec);
    if (choices) option.choices(choices);
    if (spec.parse) option.argParser(spec.parse);
    const d = spec.default;
    if (typeof d === 'boolean' || (Array.isArray(d) && d.length === 0)) {
      if (!spec.flag.startsWith('--no-')) quiet.push([key, d]);
    } else if (d !== undefined) option.default(d);
    if (spec.required) option.makeOptionMandatory();
    cmd.addOption(option);
    if (spec.off) cmd.addOption(new Option(`--no-${option.name()}`, spec.off));
  }
  // Every command's --quiet: the program's hook quietens the command's logger (see main.ts).
  if (!cmd.options.some((o) => o.long === '--quiet'))
    cmd.addOption(new Option('-q, --quiet', 'only warnings and errors on stderr: no progress, no notes'));
  // Every command's --tasks-dir: the program's hook loads the definitions before the command runs (see main.ts).
  if (!cmd.options.some((o) => o.long === '--tasks-dir')) {
    cmd.addOption(
      new Option(
        '--tasks-dir <path>',
        'task definition file or folder of them, or a shipped task by name (ECG2Pathology) (repeatable; also RUMEDBENCH_TASKS)',
      ).argParser((v: string, prev: string[] | undefined) => [...(prev ?? []), v]),
    );
  }
  cmd.hook('preAction', (_, action) => {
    for (const [key, d] of quiet) if (action.getOptionValue(key) === undefined) action.setOptionValue(key, d);
  });
  return cmd;
}
