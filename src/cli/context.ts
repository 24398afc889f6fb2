import { homedir } from "node:os";
import { openStore, resolveRoot } from "../client/open.js";
import { AgentChatError } from "../core/errors.js";
import type { Store } from "../store/types.js";

/** What every command needs from the outside world; the only place that reads `process.env`. */
export interface GlobalOptions {
  root?: string;
  json?: boolean;
  maxBody?: string;
}

export class CliContext {
  private store: Store | undefined;
  readonly abort = new AbortController();
  /** Set by a command whose exit code is another program's (e.g. `slash --exec`). */
  exitCode: number | undefined;

  constructor(
    private readonly globals: () => GlobalOptions,
    readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  get json(): boolean {
    return this.globals().json === true;
  }

  get root(): string {
    return resolveRoot({
      flag: this.globals().root,
      env: this.env.AGENT_CHAT_ROOT,
      home: homedir(),
    });
  }

  get maxBodyBytes(): number | undefined {
    const raw = this.globals().maxBody ?? this.env.AGENT_CHAT_MAX_BODY;
    if (raw === undefined || raw === "") return undefined;
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n <= 0) {
      throw new AgentChatError("INVALID_ARGUMENT", `--max-body must be a positive number of bytes`);
    }
    return n;
  }

  async open(): Promise<Store> {
    if (!this.store) {
      const options = this.maxBodyBytes === undefined ? {} : { maxBodyBytes: this.maxBodyBytes };
      this.store = await openStore(this.root, options);
    }
    return this.store;
  }

  /** The acting agent: `--as`/`--from`, else `$AGENT_CHAT_NAME`. */
  agent(given: string | undefined, flag = "--as"): string {
    const name = given ?? this.env.AGENT_CHAT_NAME;
    if (!name) {
      throw new UsageError(`${flag} NAME is required (or set AGENT_CHAT_NAME)`);
    }
    return name;
  }

  out(text: string): void {
    process.stdout.write(text);
  }

  err(text: string): void {
    process.stderr.write(text);
  }

  /** Prints one JSON document (or one NDJSON line). */
  printJson(value: unknown): void {
    process.stdout.write(`${JSON.stringify(value)}\n`);
  }

  warn(message: string): void {
    process.stderr.write(`agent-chat: warning: ${message}\n`);
  }

  async close(): Promise<void> {
    await this.store?.close();
  }
}

/** A mistake in how the command was called: exit 64. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Seconds given on the command line, as milliseconds. */
export function parseSeconds(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`${flag} must be a number of seconds`);
  return Math.round(n * 1000);
}

export function parsePositiveInt(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new UsageError(`${flag} must be a positive integer`);
  return n;
}

/** `a,b` or repeated flags, as one list. */
export function splitList(value: string | string[] | undefined): string[] {
  const items = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return items
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v !== "");
}
