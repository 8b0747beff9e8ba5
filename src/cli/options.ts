// A small option parser shared by the operator commands: --name VALUE, --name=VALUE and flags.

export interface OptionSpec {
  /** Options taking a value. */
  values: readonly string[];
  flags: readonly string[];
}

export type Parsed = { values: Record<string, string>; flags: Set<string>; positionals: string[] } | { error: string } | { help: true };

export function parseOptions(args: readonly string[], spec: OptionSpec): Parsed {
  const values: Record<string, string> = {};
  const flags = new Set<string>();
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '-h' || arg === '--help') return { help: true };
    if (arg === '--') {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith('--')) {
      positionals.push(arg);
      continue;
    }
    const [name, inline] = arg.includes('=') ? [arg.slice(2, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg.slice(2), undefined];
    if (spec.flags.includes(name)) {
      if (inline !== undefined) return { error: `--${name} takes no value` };
      flags.add(name);
    } else if (spec.values.includes(name)) {
      const value = inline ?? args[++i];
      if (value === undefined || value === '') return { error: `--${name} needs a value` };
      values[name] = value;
    } else return { error: `unknown option --${name}` };
  }
  return { values, flags, positionals };
}
