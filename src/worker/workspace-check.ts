// Which directories a workspace session may not be given (pure): the root, pseudo file systems, the
// account's home and its ancestors (the shell's start-up files live in the home itself), and the trees
// that start code later or hold the account's secrets, as well as their ancestors (a writable ancestor
// could rename them away and put its own in their place). Judged on device and inode numbers that root
// read from the START's own descriptor and from the names resolved without following symlinks
// (workspace-look.ts), never on a path string the client could swap.

/** A file's identity: `${dev}:${ino}`. */
export type FileKey = string;

/** File system types no workspace may be on (statfs(2) names as /proc/self/mountinfo gives them). */
export const PSEUDO_FILE_SYSTEMS: ReadonlySet<string> = new Set([
  'proc', 'sysfs', 'cgroup', 'cgroup2', 'devtmpfs', 'devpts', 'securityfs', 'debugfs', 'tracefs', 'bpf', 'pstore',
  'efivarfs', 'configfs', 'fusectl', 'mqueue', 'binfmt_misc', 'hugetlbfs', 'selinuxfs', 'nsfs', 'autofs', 'rpc_pipefs',
]);

/**
 * Under the home: trees that start code later (~/.config holds systemd user units, ~/.config/systemd/user,
 * the agent's own ~/.config/opencode, autostart entries; ~/.local/bin, ~/bin and ~/.cargo/bin are on PATH;
 * ~/.local/lib holds what interpreters load; ~/.vim and ~/.emacs.d run code when an editor starts;
 * ~/.ssh's authorized_keys and config run commands) and the account's secrets and credentials (gpg,
 * docker, cloud and cluster credentials) and the agent's data.
 */
export const PROTECTED_IN_HOME: readonly string[] = [
  '.config', '.ssh', '.gnupg', '.local/bin', '.local/lib', '.local/share', '.local/state',
  'bin', '.cargo/bin', '.docker', '.aws', '.kube', '.vim', '.emacs.d',
];

/** A named tree, resolved: its own key when it exists, and the keys of its existing ancestors up to the root. */
export interface NamedTree {
  name: string;
  key?: FileKey;
  ancestors: FileKey[];
  /** Why it could not be resolved (a symlink or a file where a directory belongs, an error): a refusal. */
  problem?: string;
}

export interface WorkspaceFacts {
  /** The START directory's file system type; undefined when no mount this process sees has its device. */
  fsType: string | undefined;
  /** The START directory ([0]) and its ancestors up to its root (last), as its own `..` leads. */
  chain: FileKey[];
  /** The account's home, its runtime directory and the protected trees, resolved from that root. */
  named: NamedTree[];
}

/** Undefined when the directory may be a workspace, else why not (the client's ERROR). */
export function judgeWorkspace(facts: WorkspaceFacts): string | undefined {
  if (facts.fsType === undefined) return 'the working directory is on a file system the supervisor cannot see';
  if (PSEUDO_FILE_SYSTEMS.has(facts.fsType)) return `the working directory is on a pseudo file system (${facts.fsType})`;
  const self = facts.chain[0];
  if (self === undefined) return 'the working directory cannot be examined';
  if (facts.chain.length === 1) return 'the working directory is the root directory';
  for (const tree of facts.named) {
    if (tree.problem) return `${tree.name} cannot be judged: ${tree.problem}`;
    // Without the home every check below it would pass unseen: not a workspace then.
    if (tree.name === '~' && tree.key === undefined) return "the account's home cannot be found";
    if (tree.key === self) return `the working directory is ${tree.name}`;
    if (tree.ancestors.includes(self)) return `the working directory is an ancestor of ${tree.name}`;
    if (tree.key !== undefined && tree.name !== '~' && facts.chain.includes(tree.key)) return `the working directory is inside ${tree.name}`;
  }
  return undefined;
}
