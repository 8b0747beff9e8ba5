// Wire constants of the opencode-pty protocol: frame types, limits, error codes (docs/protocol.md).

/** The version a server speaks when nothing newer is agreed; every server speaks it. */
export const PROTOCOL_VERSION = 1;
/** The newest version this codec knows (docs/protocol.md, "Version 2"). */
export const LATEST_VERSION = 2;
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
} as const;
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];
