import { lstatSync } from "node:fs";
import { homedir, tmpdir, userInfo } from "node:os";
import type { Command } from "commander";
import { type OpenOptions, openStore, resolveRoot } from "../client/open.js";
import { AgentChatError, isAgentChatError } from "../core/errors.js";
import { escapeControls } from "../core/safe-text.js";
import type { DaemonClient } from "../daemon/client.js";
import { b00tSocketPath, type SocketPlace, socketPathFor } from "../daemon/paths.js";
import { takenByOthers, untrustedSocket } from "../daemon/socket-trust.js";
import { hasPrivateKey } from "../features/trust/index.js";
import { type NatsConnectionOptions, type ParsedRoot, parseRoot } from "../store/roots.js";
import { HARNESSES, type Harness, type RenewOptions, type Store } from "../store/types.js";
import { natsOptionsFromEnv } from "./nats-env.js";
import { writeStderr, writeStdout } from "./stdio.js";
import { parsePositiveInt, parseTtl, UsageError } from "./usage.js";
import { ownSocketDir, userConfigDir } from "./user-dirs.js";
import { otherDaemonVersion } from "./version.js";

export {
  MAX_SECONDS,
  parsePositiveInt,
  parseSeconds,
  parseTtl,
  WAIT_FLAG_DEFAULTS,
} from "./usage.js";
export { UsageError };

/** What every command needs from the outside world; the only place that reads `process.env`. */
export interface GlobalOptions {
  root?: string;
  json?: boolean;
  maxBody?: string;
}

export class CliContext {
  private store: Store | undefined;
  private signing: Store | undefined;
  private aborter: AbortController | undefined;
  /** Set by a command whose exit code is another program's (e.g. `slash --exec`). */
  exitCode: number | undefined;
  /**
   * Whether the folder store keeps a file watch on the channels it opens: a command that ends
   * once it has answered (a post, a read) has nothing to wait for, and setting up a watch costs
   * more than the one folder read each of its operations then makes.
   */
  watchFolders = true;
  /**
   * Whether the command works on a folder root itself even while a daemon serves it: a post, a
   * read or a peek that ends once it answered gains nothing from the daemon but costs the
   * connection (node:net, the socket's checks, a round trip). The folder is the truth either way
   * and takes writers side by side under its locks; the daemon sees the new file through its own
   * file watch, so the waits parked on it wake as they do for chat.py's posts.
   */
  folderFirst = false;
  /**
   * Set by the commands of chat.py 0.7's own grammar (`task create`, `event post`, …): their
   * refusals exit as chat.py's do (see `asReference07`), so a script written for it works.
   */
  speaksReference07 = false;

  constructor(
    private readonly globals: () => GlobalOptions,
    readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /**
   * Aborted by Ctrl-C or SIGTERM (run.ts), for a command that waits. Made when first asked for:
   * Node loads its abort-controller module for the first one, which a post or a read never needs.
   */
  get abort(): AbortController {
    this.aborter ??= new AbortController();
    return this.aborter;
  }

  get json(): boolean {
    return this.globals().json === true;
  }

  /** The root as the user gave it (`--root`, `$AGENT_CHAT_ROOT`, `~/agent-chat`). */
  get root(): string {
    return resolveRoot({
      flag: this.globals().root,
      env: this.env.AGENT_CHAT_ROOT,
      home: homedir(),
    });
  }

  /** The root as the one parser reads it: a folder or a NATS namespace, never a URL as a path. */
  get rootSpec(): ParsedRoot {
    return parseRoot(this.root);
  }

  /**
   * The root as another process is given it (a tool's configuration, a hook, a child): a
   * folder's absolute path, so it means the same from any working folder; a URL as given.
   */
  get rootArg(): string {
    const spec = this.rootSpec;
    return spec.kind === "folder" ? spec.path : spec.given;
  }

  get maxBodyBytes(): number | undefined {
    const flag = this.globals().maxBody;
    if (flag !== undefined) return parsePositiveInt(flag, "--max-body");
    const env = this.env.AGENT_CHAT_MAX_BODY;
    if (env === undefined || env === "") return undefined;
    return parsePositiveInt(env, "AGENT_CHAT_MAX_BODY");
  }

  /**
   * The store behind the root: the daemon that owns it when one is running (so waits and tails
   * wake through its subscriptions), else the folder itself. `AGENT_CHAT_DAEMON=off` forces the
   * folder.
   */
  async open(): Promise<Store> {
    if (!this.store) {
      // A NATS root is its own live transport; a folder root goes through its daemon if one runs.
      this.store =
        this.rootSpec.kind === "nats"
          ? await openStore(this.root, this.openOptions())
          : ((this.folderFirst ? undefined : await this.connectDaemon()) ??
            (await this.openFolder()));
    }
    return this.store;
  }

  /**
   * The store a post by `from` goes to: the root's own store, signing, when `from` holds a key
   * here (a signer does not cross the daemon's socket; the daemon sees the file as any other),
   * else {@link open}. Only the commands whose poster or reader the user names use it (post,
   * read and wait --as, whose read receipts it signs, mcp --as, request, approve): {@link open}
   * signs for no one, so that a viewer's From field or a b00t
   * `sender` never signs with a key this user happens to hold.
   */
  async openFor(from: string): Promise<Store> {
    if (!hasPrivateKey(this.configDir, from)) return this.open();
    this.signing ??= await this.openFolder({ sign: true });
    return this.signing;
  }

  /**
   * The user's own folder for keys and pins: `$XDG_CONFIG_HOME/agent-chat`, else
   * `~/.config/agent-chat`. Never in the root, which others write.
   */
  get configDir(): string {
    return userConfigDir(this.env, this.env.HOME || homedir());
  }

  /** Options for opening any root; NATS connection options only for nats:// roots. */
  openOptions(): OpenOptions {
    const options: OpenOptions = {
      harness: this.harness,
      // Presence is a courtesy of the command: one that cannot be recorded is said once.
      onWarning: (warning) => this.warn(warning),
      signatures: { configDir: this.configDir, sign: false },
    };
    if (!this.watchFolders) options.watch = false;
    if (this.maxBodyBytes !== undefined) options.maxBodyBytes = this.maxBodyBytes;
    if (this.rootSpec.kind === "nats") options.nats = this.natsOptions();
    return options;
  }

  /** NATS connection options from the environment (credentials, TLS, timeout). */
  natsOptions(): NatsConnectionOptions {
    return { ...natsOptionsFromEnv(this.env), onWarning: (w) => this.warn(w) };
  }

  /** The root's store without any daemon in between (what `serve` itself serves). */
  openFolder(signatures: { sign?: boolean } = {}): Promise<Store> {
    const options = this.openOptions();
    options.signatures = { ...options.signatures, ...signatures };
    return openStore(this.root, options);
  }

  /**
   * The store that runs `operation`, one only a folder root has (chat.py 0.7's files, read and
   * mended where they lie): through a daemon, the same folder opened here. A root without it
   * (NATS) is refused with `refusal`, having opened nothing more (a second connection left open
   * would keep the process from exiting).
   */
  async openWith<K extends keyof Store>(
    operation: K,
    refusal: string,
  ): Promise<Store & Required<Pick<Store, K>>> {
    let store = await this.open();
    if (!store[operation] && this.rootSpec.kind !== "nats") store = await this.openFolder();
    if (!store[operation]) throw new AgentChatError("UNSUPPORTED", refusal);
    return store as Store & Required<Pick<Store, K>>;
  }

  private async connectDaemon(): Promise<DaemonClient | undefined> {
    if (this.env.AGENT_CHAT_DAEMON === "off") return undefined;
    const path = this.socketPath;
    // No socket file, no daemon (connecting would fail with ENOENT): a folder command then does
    // not load the socket client and node:net, one of the costlier built-ins to start.
    if (noSuchFile(path)) return undefined;
    // Another user's socket would receive every post and answer as the root (DESIGN §10).
    const untrusted = untrustedSocket(path);
    if (untrusted !== undefined) {
      this.warn(`not using the daemon socket ${path}: ${untrusted}; working on the root directly`);
      return undefined;
    }
    const { DaemonClient } = await import("../daemon/client.js");
    try {
      const client = await DaemonClient.connect(path, { timeoutMs: 1000, harness: this.harness });
      const other = otherDaemonVersion(client.daemonVersion, path);
      if (other) this.warn(other);
      return client;
    } catch (err) {
      if (isAgentChatError(err, "BACKEND_UNAVAILABLE")) return undefined;
      throw err;
    }
  }

  /**
   * The daemon socket of this root: `$AGENT_CHAT_SOCKET`, else derived from the root, in the
   * user's own folder when the shared one is another user's (paths.ts; `serve` and `info` say so).
   */
  get socketPath(): string {
    return (
      this.env.AGENT_CHAT_SOCKET || socketPathFor(this.rootSpec, this.socketPlace, takenByOthers)
    );
  }

  /** Where the socket would be if no other user had taken its shared folder. */
  get sharedSocketPath(): string {
    return this.env.AGENT_CHAT_SOCKET || socketPathFor(this.rootSpec, this.socketPlace);
  }

  private get socketPlace(): SocketPlace {
    return {
      runtimeDir: this.env.XDG_RUNTIME_DIR,
      tmpDir: tmpdir(),
      uid: process.getuid?.() ?? 0,
      ownDir: ownSocketDir(this.env, this.env.HOME || homedir()),
    };
  }

  /** Where unmodified b00t clients write. */
  get b00tSocketPath(): string {
    return b00tSocketPath(homedir());
  }

  /** The OS user, b00t's default sender and channel owner. */
  get osUser(): string {
    try {
      return userInfo().username;
    } catch {
      return this.env.USER ?? this.env.LOGNAME ?? "user";
    }
  }

  /** Where this process runs, for presence: set by the MCP server, else told by the host's env. */
  private harnessSet: Harness | undefined;

  get harness(): Harness {
    return this.harnessSet ?? harnessFromEnv(this.env);
  }

  set harness(harness: Harness) {
    this.harnessSet = harness;
  }

  /** The acting agent: `--as`/`--from`, else `$AGENT_CHAT_NAME`. */
  agent(given: string | undefined, flag = "--as"): string {
    const name = given ?? this.env.AGENT_CHAT_NAME;
    if (!name) {
      throw new UsageError(`${flag} NAME is required (or set AGENT_CHAT_NAME)`);
    }
    return name;
  }

  /**
   * Everything a command prints passes here, and with it text that others wrote (bodies, titles,
   * topics, names, file names of the root): control characters are escaped on the way, so that
   * nothing in a root moves the cursor, rewrites a line or sets the clipboard of the terminal it
   * is read in (docs/signatures.md, "What the model sees"). We print none of our own.
   */
  out(text: string): void {
    writeStdout(escapeControls(text));
  }

  err(text: string): void {
    writeStderr(escapeControls(text));
  }

  /**
   * Prints one JSON document (or one NDJSON line). JSON.stringify escapes C0 controls itself;
   * the rest of what {@link escapeControls} escapes becomes a `\\u` escape of the same string.
   */
  printJson(value: unknown): void {
    writeStdout(`${escapeControls(JSON.stringify(value))}\n`);
  }

  warn(message: string): void {
    this.err(`agent-chat: warning: ${message}\n`);
  }

  async close(): Promise<void> {
    await this.signing?.close();
    await this.store?.close();
  }
}

/**
 * The host tool a command runs under, from what each sets in its children's environment
 * (`$AGENT_CHAT_HARNESS` overrides): Claude Code `CLAUDECODE=1`, Gemini CLI `GEMINI_CLI=1`,
 * Codex `CODEX_SANDBOX` or `CODEX_HOME`, Copilot CLI `COPILOT_CLI=1`; else a person or script
 * at a shell (`cli`).
 */
export function harnessFromEnv(env: NodeJS.ProcessEnv): Harness {
  const given = HARNESSES.find((h) => h === env.AGENT_CHAT_HARNESS);
  if (given) return given;
  if (env.CLAUDECODE === "1") return "claude-code";
  if (env.GEMINI_CLI === "1") return "gemini";
  if (env.COPILOT_CLI === "1") return "copilot";
  if (env.CODEX_SANDBOX || env.CODEX_HOME || env.CODEX_MANAGED_BY_NPM) return "codex";
  return "cli";
}

function noSuchFile(path: string): boolean {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) === undefined;
  } catch {
    return false; // not for us to judge: connecting says what is wrong
  }
}

export { formatDuration } from "../core/duration.js";

/** A holder's `--token`, as the store's option (absent: the holder's current token). */
export function tokenOption(token: string | undefined): { token?: number } {
  return token === undefined ? {} : { token: parsePositiveInt(token, "--token") };
}

/** The flags of a command only a lease's holder may run: who they are, and the token they hold. */
export interface HolderFlags {
  as?: string;
  token?: string;
}

/** `--as` the holder and `--token`, as every holder-only command of tasks and path leases has. */
export function withHolder(command: Command): Command {
  return command
    .option("--as <name>", "the holder (default: $AGENT_CHAT_NAME)")
    .option("--token <n>", "the fencing token you hold; refused (exit 3) when it is stale");
}

/** What tells a task's renewal command from a path lease's. */
export interface Renewal<T> {
  /** How `--ttl` is described (what the lease is when it is not given). */
  ttl: string;
  example: string;
  renew(
    store: Store,
    channel: string,
    target: string,
    as: string,
    options: RenewOptions,
  ): Promise<T>;
  /** The renewed thing and its lease, as `renewed <name> in <channel> (<lease>)` says them. */
  describe(info: T): [name: string, lease: string];
}

/**
 * A holder's renewal (a task's, a path lease's) on `<channel> <target>`: `--as` and `--token`
 * of the holder, `--ttl` for the new lease, printed as JSON or as one line.
 */
export function renewCommand<T>(command: Command, ctx: CliContext, renewal: Renewal<T>): Command {
  return withHolder(command)
    .option("--ttl <duration>", renewal.ttl)
    .addHelpText("after", `\nExample:\n  ${renewal.example}`)
    .action(async (channel: string, target: string, opts: HolderFlags & { ttl?: string }) => {
      const as = ctx.agent(opts.as);
      const options = {
        ...tokenOption(opts.token),
        ...(opts.ttl === undefined ? {} : { ttlMs: parseTtl(opts.ttl) }),
      };
      const info = await renewal.renew(await ctx.open(), channel, target, as, options);
      if (ctx.json) return ctx.printJson(info);
      const [name, lease] = renewal.describe(info);
      ctx.out(`renewed ${name} in ${channel} (${lease})\n`);
    });
}

/** What tells one command on a message (`<channel> <seq>`: receipts, explain, thread) from another. */
export interface MessageCommand<O> {
  name: string;
  description: string;
  /** How `<seq>` is described: which message it names. */
  seq: string;
  /** Its flags, in the order `--help` lists them. */
  options?: (command: Command) => Command;
  /** The command lines the help shows as examples. */
  examples: string[];
  run(store: Store, channel: string, seq: number, opts: O): Promise<void>;
}

/** Registers a command on one message: `<seq>` read as a positive decimal once the root is open. */
export function messageCommand<O>(
  program: Command,
  ctx: CliContext,
  spec: MessageCommand<O>,
): Command {
  const head = program
    .command(spec.name)
    .description(spec.description)
    .argument("<channel>")
    .argument("<seq>", spec.seq);
  return (spec.options ? spec.options(head) : head)
    .addHelpText("after", examplesHelp(spec.examples))
    .action(async (channel: string, seq: string, opts: O) => {
      const store = await ctx.open();
      await spec.run(store, channel, parsePositiveInt(seq, "<seq>"), opts);
    });
}

/** What tells one command on a channel alone (`<channel>`, no flags: roster, leases, pending) from another. */
export interface ChannelCommand {
  name: string;
  description: string;
  /** The command lines the help shows as examples. */
  examples: string[];
  run(store: Store, channel: string): Promise<void>;
}

/** Registers a command whose one argument is `<channel>`, run on the root's store. */
export function channelCommand(program: Command, ctx: CliContext, spec: ChannelCommand): Command {
  return program
    .command(spec.name)
    .description(spec.description)
    .argument("<channel>")
    .addHelpText("after", examplesHelp(spec.examples))
    .action(async (channel: string) => spec.run(await ctx.open(), channel));
}

/** The help's examples section: `Example:` over one, `Examples:` over more. */
function examplesHelp(examples: string[]): string {
  return `\n${examples.length === 1 ? "Example" : "Examples"}:\n  ${examples.join("\n  ")}`;
}

/** `a,b` or repeated flags, as one list. */
export function splitList(value: string | string[] | undefined): string[] {
  const items = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return items
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v !== "");
}

/** The command is chat.py 0.7's: its refusals exit as chat.py's do (`asReference07`). */
export function speaksReference07(command: Command, ctx: CliContext): void {
  command.hook("preAction", () => {
    ctx.speaksReference07 = true;
  });
}
