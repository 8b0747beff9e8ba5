// A small option parser shared by the operator commands: --name VALUE, --name=VALUE and flags.
import { DEFAULT_LAYOUT, type Layout } from '../operate/index.ts';
import type { CommandContext } from './context.ts';
import { EXIT } from './exit-codes.ts';

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

export type Options = Exclude<Parsed, { error: string } | { help: true }>;

/**
 * A command without positional arguments: its options, or the exit status once --help (stdout) or a
 * usage error (stderr, with the usage) is printed.
 */
export function commandOptions(command: string, usage: string, args: readonly string[], spec: OptionSpec, context: CommandContext): Options | number {
  const parsed = parseOptions(args, spec);
  if ('help' in parsed) {
    context.stdout(usage);
    return EXIT.OK;
  }
  if ('error' in parsed || parsed.positionals.length) {
    context.stderr(`opencode-ptyctl ${command}: ${'error' in parsed ? parsed.error : `unexpected argument ${parsed.positionals[0]}`}\n\n${usage}`);
    return EXIT.USAGE;
  }
  return parsed;
}

/** The layout `--prefix DIR` names (trailing slashes dropped), or the default one. */
export function prefixLayout(prefix: string | undefined): Layout {
  return { ...DEFAULT_LAYOUT, libDir: prefix?.replace(/\/+$/, '') ?? DEFAULT_LAYOUT.libDir };
}
