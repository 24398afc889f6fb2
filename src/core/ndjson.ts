/**
 * Newline-delimited framing over bytes, with a limit: the one line splitter of the daemon, its
 * client, the MCP stdio transport and the tools that read their output.
 *
 * It splits on the byte `\n`, which never occurs inside a multi-byte UTF-8 character, so a
 * character cut between two chunks is whole again in its line; decoding is left to the reader of
 * whole lines (the daemon refuses a line that is not UTF-8, others decode leniently).
 *
 * It never holds more than `maxLineBytes` of an unfinished line: a line that passes the limit is
 * reported once, as soon as it passes it (not when, if ever, its newline comes), and the rest of
 * it is dropped as it arrives, so the stream resumes at the next line. A reader that cannot
 * resume (the daemon closes such a connection) calls {@link LineSplitter.close} from `onTooLong`.
 */
export interface LineSplitterOptions {
  /** The longest line accepted, in bytes, its `\n` excluded (a `\r` before it counts). */
  maxLineBytes: number;
  /** How many first bytes of an over-long line `onTooLong` is given (default 0). */
  headBytes?: number;
  /** Each complete line, without its `\n` nor a `\r` before it; a view valid during the call. */
  onLine(line: Buffer): void;
  /** Once per over-long line: the bytes seen of it so far, and its first `headBytes` bytes. */
  onTooLong(tooLong: TooLongLine): void;
}

export interface TooLongLine {
  bytes: number;
  head: Buffer;
}

export class LineSplitter {
  /** The limit; a reader may raise it between chunks (the daemon client does once it knows its peer). */
  maxLineBytes: number;
  private pending: Buffer[] = [];
  private held = 0;
  /** Set while the rest of an over-long line is being dropped. */
  private skipping = false;
  private closed = false;

  constructor(private readonly options: LineSplitterOptions) {
    this.maxLineBytes = options.maxLineBytes;
  }

  /** Bytes of the unfinished line held now (at most `maxLineBytes`). */
  get pendingBytes(): number {
    return this.held;
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length && !this.closed) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl === -1 ? chunk.length : nl;
      this.take(chunk.subarray(start, end), nl !== -1);
      start = end + 1;
    }
  }

  /** One piece of a line: all of it up to its `\n` (`ended`), or up to the chunk's end. */
  private take(piece: Buffer, ended: boolean): void {
    if (this.skipping) {
      if (ended) this.skipping = false;
    } else if (this.held + piece.length > this.maxLineBytes) {
      this.refuse(piece, ended);
    } else if (!ended) {
      // A copy: a view would keep the whole chunk alive for a few bytes of it.
      this.pending.push(Buffer.from(piece));
      this.held += piece.length;
    } else {
      const line =
        this.held === 0 ? piece : Buffer.concat([...this.pending, piece], this.held + piece.length);
      this.reset();
      this.options.onLine(line.at(-1) === 0x0d ? line.subarray(0, -1) : line);
    }
  }

  /** Drops the unfinished line (and the rest of an over-long one): the next byte starts a line. */
  reset(): void {
    this.pending = [];
    this.held = 0;
    this.skipping = false;
  }

  /** Drops what is held and ignores all further input, the rest of the chunk being pushed too. */
  close(): void {
    this.reset();
    this.closed = true;
  }

  private refuse(piece: Buffer, ended: boolean): void {
    const bytes = this.held + piece.length;
    const headBytes = this.options.headBytes ?? 0;
    const head =
      headBytes === 0
        ? Buffer.alloc(0)
        : Buffer.concat([...this.pending, piece.subarray(0, headBytes)]).subarray(0, headBytes);
    this.reset();
    this.skipping = !ended;
    this.options.onTooLong({ bytes, head });
  }
}
