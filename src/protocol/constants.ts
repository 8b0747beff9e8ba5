// Wire constants of the opencode-pty protocol: frame types, limits, error codes (docs/protocol.md).

/** The version a server speaks when nothing newer is agreed; every server speaks it. */
export const PROTOCOL_VERSION = 1;
/** The newest version this codec knows (docs/protocol.md, "Version 4"): the broker, the client and the
 * helper's wire all speak 1..4. */
export const LATEST_VERSION = 4;
/** Version 3 (docs/protocol.md, "Version 3"): kept sessions, LIST, ATTACH, STOP_SESSION. */
export const KEEP_VERSION = 3;
/** Version 4 (docs/protocol.md, "Version 4"): START names a profile, a network mode and budgets. */
export const SANDBOX_VERSION = 4;
/** First four bytes of HELLO, so a stray peer speaking something else is rejected at once. */
export const HELLO_MAGIC = 0x4f435054; // "OCPT"

/** Every frame: 1 byte type, 4 bytes payload length (unsigned, big-endian), payload. */
export const HEADER_SIZE = 5;

export const FrameType = {
  HELLO: 0x01, // client → server: magic, lowest and highest version the client speaks
  WELCOME: 0x02, // server → client: authenticated; the version chosen
  START: 0x03, // client → server: terminal size, cwd dev/ino, argv, env; its bytes carry the cwd fd
  STARTED: 0x04, // server → client: main PID and unit name of the session
  INPUT: 0x05, // client → server: bytes for the terminal (non-empty, counted against credit)
  OUTPUT: 0x06, // server → client: bytes from the terminal (non-empty, counted against credit)
  RESIZE: 0x07, // client → server: rows, cols
  SIGNAL: 0x08, // client → server: a signal for the session's processes
  STOP: 0x09, // client → server: end the session (empty)
  STOPPED: 0x0a, // server → client: stopped on request, all output delivered (empty)
  EXIT: 0x0b, // server → client: the program ended, all output delivered
  ERROR: 0x0c, // server → client: code and text; the server closes after it
  CREDIT: 0x0d, // both ways: the sender may send this many more INPUT/OUTPUT payload bytes
  END_INPUT: 0x0e, // client → server, version 2: the client's input has ended (empty)
  LIST: 0x0f, // client → server, version 3: the client's kept sessions, instead of START (empty)
  SESSIONS: 0x10, // server → client, version 3: LIST's answer, then the server closes
  ATTACH: 0x11, // client → server, version 3: id, fromOffset, role, rows, cols, instead of START
  ATTACHED: 0x12, // server → client, version 3: ATTACH taken; the session's offsets and controller generation
  TRUNCATED: 0x13, // server → client, version 3: bytes before `oldest` are no longer retained; output goes on from there
  CONTROLLER_CHANGED: 0x14, // server → client, version 3: a new controller generation and the receiver's role in it
  STOP_SESSION: 0x15, // client → server, version 3: end a kept session by id, instead of START
} as const;
export type FrameTypeCode = (typeof FrameType)[keyof typeof FrameType];

export const Limits = {
  /** Largest payload of any frame (START is the largest frame). */
  MAX_FRAME_PAYLOAD: 64 * 1024,
  /** Largest INPUT/OUTPUT payload, and largest ERROR payload. */
  MAX_IO_PAYLOAD: 32 * 1024,
  MAX_ARGC: 512,
  MAX_ENVC: 128,
  /** Largest single argv element, environment name or value, in bytes. */
  MAX_STRING: 16 * 1024,
  MAX_UNIT_NAME: 255,
  MAX_RESULT: 255,
  /** Credit each side holds for sending data when the session starts (after STARTED). */
  INITIAL_WINDOW: 256 * 1024,
  /** Most credit a sender may hold at once; granting beyond it is a protocol error. */
  MAX_WINDOW: 16 * 1024 * 1024,
  MAX_SIGNAL: 64,
  /** Version 2: a u64 figure of the end record that the server could not measure. */
  UNAVAILABLE: 0xffff_ffff_ffff_ffffn,
  /** Version 3: ATTACH's fromOffset meaning "from the next byte on" (no replay). */
  FROM_NOW: 0xffff_ffff_ffff_ffffn,
  /** Version 3: the most bytes a session may retain (START's retainBytes, session.maxRetainedBytes). */
  MAX_RETAINED_BYTES: 64 * 1024 * 1024,
  /** Version 3: START's label, plain text without control characters. */
  MAX_LABEL: 256,
  /** Version 3: SESSIONS' program (argv[0]) and cwd are cut to these many bytes, at a character boundary. */
  MAX_LIST_PROGRAM: 256,
  MAX_LIST_CWD: 1024,
  /** Version 4: START's profile name, 0 (none: the server's floor) or 1..32 bytes of [a-z0-9-]. */
  MAX_PROFILE_NAME: 32,
} as const;

/** Numeric ERROR codes; the text beside each is what the server sends. */
export const ErrorCode = {
  PROTOCOL: 1, // malformed, unknown, oversize or out-of-order frame
  VERSION: 2, // "unsupported protocol version"
  AUTHENTICATION: 3, // "authentication failed": peer not the configured client
  ADMISSION: 4, // "authentication admission limit reached"
  SESSION_LIMIT: 5, // "session limit reached"
  HANDSHAKE_TIMEOUT: 6, // "handshake timeout": no valid START within the deadline
  BAD_START: 7, // START rejected: wrong fd count, not a directory, dev/ino mismatch, bad argv/env
  START_FAILED: 8, // the session unit could not be started
  FLOW: 9, // data sent beyond the granted credit
  INTERNAL: 10, // the supervisor failed; the session is stopped
  SHUTDOWN: 11, // the supervisor is shutting down
  NO_SESSION: 12, // version 3: no kept session of this client has that id
  NOT_PERMITTED: 13, // version 3: this peer may not LIST, ATTACH or STOP_SESSION (only the client service's MainPID and root), or root asked to START
  NOT_CONTROLLER: 14, // version 3: INPUT, RESIZE, SIGNAL, END_INPUT or STOP from a connection that is not the controller
  KEEP_LIMIT: 15, // version 3: a kept START while limits.maxKept sessions are kept
  BAD_OFFSET: 16, // version 3: ATTACH's fromOffset is past the session's next offset, or at or above 2^63 (but FROM_NOW)
  OBSERVER_LIMIT: 17, // version 3: an observing ATTACH while limits.maxObservers observe
  SESSION_STATE: 18, // version 3: ATTACH or STOP_SESSION while the session is still starting or already finishing
  PROFILE: 19, // version 4: an unknown profile, one the server does not offer, or one below its floor
  BUDGET: 20, // version 4: a budget of 0, beyond 2^53-1, past the server's ceiling, or too small for the session
  NETWORK: 21, // version 4: an unknown network mode, or one above the server's ceiling
  NOT_ENFORCED: 22, // version 4: a guarantee asked for that this host does not enforce (confirmed on the started unit)
} as const;
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];
