// Exit statuses of the operator commands (docs/operations.md, "Exit statuses"); `run` keeps its own.
export const EXIT = {
  OK: 0,
  /** A step failed part-way; the message names it, and the install record says what exists. */
  FAILED: 1,
  /** The command line was not understood. */
  USAGE: 2,
  /** The host does not meet a requirement; nothing was changed. */
  REFUSED: 3,
  /** verify found a difference; stop found no such session; status found nothing installed. */
  DIFFERS: 4,
} as const;

export const EXIT_HELP = `Exit status: ${EXIT.OK} done (or nothing to do), ${EXIT.FAILED} a step failed (named on stderr),
${EXIT.USAGE} command line error, ${EXIT.REFUSED} refused (host requirement not met; nothing changed),
${EXIT.DIFFERS} difference found (verify), no such session (stop), not installed (status).
`;
