import { connect } from "node:net";
import { dirname, resolve } from "node:path";
import type { Command } from "commander";
import { type B00tEnvelope, validateEnvelope } from "../../core/envelope.js";
import { AgentChatError, isAgentChatError } from "../../core/errors.js";
import { DaemonClient } from "../../daemon/client.js";
import { probeSocket, type SocketState } from "../../daemon/listen.js";
import type { DaemonInfo } from "../../daemon/protocol.js";
import { untrustedSocket } from "../../daemon/socket-trust.js";
import { canonicalRoot } from "../../store/roots.js";
import { type CliContext, UsageError } from "../context.js";
import { LOG_LEVELS, runServe, type ServeFlags } from "./serve.js";

const DEFAULT_NATS_URL = "nats://127.0.0.1:4222";

/** `serve` (the daemon), `send` and `info` (after b00t-cli's `chat send` / `chat info`). */
export function registerDaemonCommands(program: Command, ctx: CliContext): void {
  registerServe(program, ctx);
  registerSend(program, ctx);
  registerInfo(program, ctx);
}

function registerServe(program: Command, ctx: CliContext): void {
  program
    .command("serve")
    .description(
      "run the daemon that owns the root: a Unix socket speaking NDJSON, instant fan-out",
    )
    .option("--socket <path>", "listen here instead of the root's own socket path")
    .option("--b00t", "also listen at ~/.b00t/chat.channel.socket for unmodified b00t clients")
    .option("--no-auto-create", "refuse envelopes for channels that do not exist")
    .option("--max-line <bytes>", "longest accepted line (default 1048576)")
    .option(
      "--max-input <bytes>",
      "most bytes of unfinished lines held across all connections (default 67108864)",
    )
    .option("--http [address]", "also serve the web viewer at [HOST:]PORT (default 127.0.0.1:7391)")
    .option("--http-allow-remote", "let the viewer listen on a non-loopback address")
    .option(
      "--log <level>",
      `what stderr says: ${LOG_LEVELS.join(" | ")} (default: $AGENT_CHAT_LOG_LEVEL, else info)`,
    )
    .addHelpText(
      "after",
      "\nLogs on stderr (one JSON object a line with --json): at info, each envelope" +
        "\nposted (its channel, sender and body size); at info and warn, each line refused" +
        "\nwithout an answer anyone reads (an invalid envelope, malformed JSON), with the" +
        "\nreason. agent-chat info counts both. b00t's free-form names map to valid ones" +
        '\n("Mission Delta" -> mission-delta; the name as sent is kept in the message).\n' +
        "\nStops cleanly on Ctrl-C or SIGTERM (exit 0). Exits 5 when a daemon already owns the root." +
        "\nThe protocol is in docs/daemon.md.\n\nExamples:\n" +
        "  agent-chat serve\n  agent-chat --root ./chat serve --b00t\n" +
        "  agent-chat serve --http 8080\n" +
        "  agent-chat serve --b00t --log warn\n" +
        `  echo '{"channel":"ops","sender":"ci","body":"deployed","timestamp":"2025-03-04T05:30:00Z"}' \\\n` +
        '    | nc -UN "$(agent-chat --json info | jq -r .socket)"',
    )
    .action((opts: ServeFlags) => runServe(ctx, opts, program.version() ?? "0.0.0-dev"));
}

function registerSend(program: Command, ctx: CliContext): void {
  program
    .command("send")
    .description("send a b00t chat envelope through the daemon (or NATS), like b00t-cli chat send")
    .requiredOption("--message <text>", "the message body")
    .option("--channel <name>", "channel (default: account.<os-user>)")
    .option("--sender <name>", "sender (default: the OS user)")
    .option("--metadata <json>", "a JSON object; to/title/status/reply_to shape the message")
    .option("--transport <kind>", "local (the daemon's socket) or nats", "local")
    .option(
      "--nats-url <url>",
      `NATS server for --transport nats (default: a nats:// root's servers, else $NATS_URL, else ${DEFAULT_NATS_URL})`,
    )
    .option("--socket <path>", "the daemon socket to use (default: the root's)")
    .addHelpText(
      "after",
      "\nA channel that does not exist is created, open to everyone (unless the daemon runs with" +
        "\n--no-auto-create). Fails within a second when no daemon is running.\n\nExamples:\n" +
        "  agent-chat send --channel mission.delta --message 'artifact staged'\n" +
        `  agent-chat send --message 'review please' --metadata '{"to":"bob","ticket":"OPS-123"}'\n` +
        "  agent-chat send --transport nats --channel ops --message deploying",
    )
    .action(async (opts: SendFlags) => {
      const user = ctx.osUser;
      const envelope: B00tEnvelope = {
        channel: opts.channel ?? `account.${user}`,
        sender: opts.sender ?? user,
        body: opts.message,
        timestamp: new Date().toISOString(),
      };
      if (opts.metadata !== undefined) envelope.metadata = parseMetadata(opts.metadata);
      validateEnvelope(envelope);
      if (opts.transport === "nats") return sendOverNats(ctx, opts.natsUrl, envelope);
      if (opts.transport !== "local") {
        throw new UsageError(`--transport must be local or nats, not ${opts.transport}`);
      }
      return sendLocal(ctx, opts.socket ?? ctx.socketPath, envelope);
    });
}

/** `send` over a Unix socket: our daemon's, acknowledged, or another program's (b00t's). */
async function sendLocal(ctx: CliContext, socket: string, envelope: B00tEnvelope): Promise<void> {
  const untrusted = untrustedSocket(socket);
  if (untrusted !== undefined) {
    throw new AgentChatError("BACKEND_UNAVAILABLE", `not sending to ${socket}: ${untrusted}`);
  }
  if (!(await isOurSocket(ctx, socket))) return sendToForeignSocket(ctx, socket, envelope);
  const client = await DaemonClient.connect(socket, { timeoutMs: 1000 });
  try {
    const result = await client.envelope(envelope);
    if (ctx.json) {
      return ctx.printJson({ transport: "local", socket, ...result, acknowledged: true });
    }
    ctx.out(`sent #${result.seq} to ${result.channel} (${result.file})\n`);
  } finally {
    await client.close();
  }
}

function registerInfo(program: Command, ctx: CliContext): void {
  program
    .command("info")
    .description("show the root, the daemon socket(s) and whether a daemon is live, the transports")
    .option("--socket <path>", "inspect this socket instead of the root's")
    .addHelpText("after", "\nExamples:\n  agent-chat info\n  agent-chat --json info")
    .action(async (opts: { socket?: string }) => {
      const socket = opts.socket ?? ctx.socketPath;
      const b00t = ctx.b00tSocketPath;
      const found = await askDaemon(socket);
      const { state, daemon } = found;
      const b00tState = await probeSocket(b00t).catch(() => "absent" as const);
      const natsUrl = natsServer(ctx);
      const root = canonicalRoot(ctx.rootSpec);
      if (ctx.json) {
        return ctx.printJson({
          root,
          socket,
          live: daemon !== undefined,
          state,
          daemon: daemon ?? null,
          b00t: { socket: b00t, state: b00tState, ours: daemon?.sockets.includes(b00t) ?? false },
          transports: [
            { name: "local", socket, live: daemon !== undefined },
            { name: "nats", url: natsUrl },
          ],
        });
      }
      const shared = ctx.sharedSocketPath;
      const taken =
        opts.socket === undefined && shared !== socket
          ? `            (${dirname(shared)} is another user's, or a link: not used)\n`
          : "";
      ctx.out(
        `root:       ${root}\nsocket:     ${socket}\n${taken}daemon:     ${liveText(found, socket)}\n` +
          `b00t:       ${b00t} (${b00tState === "live" ? (daemon?.sockets.includes(b00t) ? "ours" : "live") : b00tState})\n` +
          `transports: local (unix socket), nats (${natsUrl})\n` +
          envelopesLine(daemon),
      );
    });
}

/** The socket's state, and the daemon's own account when one answers there within a second. */
async function askDaemon(
  socket: string,
): Promise<{ state: DaemonState; daemon?: DaemonInfo; untrusted?: string }> {
  const state = await probeSocket(socket);
  if (state !== "live") return { state };
  // Not asked: another user's listener would answer as a daemon of ours.
  const untrusted = untrustedSocket(socket);
  if (untrusted !== undefined) return { state: "untrusted", untrusted };
  try {
    const client = await DaemonClient.connect(socket, { timeoutMs: 1000 });
    const daemon = await client.info();
    await client.close();
    return { state, daemon };
  } catch {
    // Something accepts connections there (so `serve` refuses the path, exit 5) but does not
    // answer as our daemon: a stopped or hung daemon, or another program's socket.
    return { state: "not-responding" };
  }
}

/** What `info` found at a socket: a probe's answer, or what it judged before asking. */
type DaemonState = SocketState | "not-responding" | "untrusted";

function liveText(
  { state, daemon, untrusted }: Awaited<ReturnType<typeof askDaemon>>,
  socket: string,
): string {
  if (untrusted !== undefined) {
    return `not used: ${untrusted} (every command works on the root directly)`;
  }
  if (daemon) {
    return `live (pid ${daemon.pid}, ${daemon.connections} connection(s), ${daemon.subscriptions} subscription(s))`;
  }
  if (state === "not-responding") {
    return (
      "not responding (a process accepts connections but did not answer within 1 s: a " +
      "stopped or hung daemon, or another program's socket; serve refuses to start until " +
      `it is gone: resume it with kill -CONT, or stop it; fuser ${socket} names it)`
    );
  }
  return state === "dead"
    ? "no daemon (stale socket file; the next serve removes it)"
    : "no daemon (start one with: agent-chat serve)";
}

/**
 * `send` to b00t's own listener (or any other program's): it takes bare envelope lines, as
 * b00t-cli writes them, and answers nothing, so nothing else may be written to it.
 */
async function sendToForeignSocket(
  ctx: CliContext,
  socket: string,
  envelope: B00tEnvelope,
): Promise<void> {
  await writeEnvelopeLine(socket, envelope);
  if (ctx.json) {
    ctx.printJson({ transport: "local", socket, channel: envelope.channel, acknowledged: false });
  } else {
    ctx.out(
      `sent to ${envelope.channel} via ${socket} (not an agent-chat daemon: no acknowledgement)\n`,
    );
  }
}

/**
 * `send --transport nats`: to `--nats-url`, else the root's own servers, else `$NATS_URL`, else
 * the local default, with the environment's connection options.
 */
async function sendOverNats(
  ctx: CliContext,
  natsUrl: string | undefined,
  envelope: B00tEnvelope,
): Promise<void> {
  const given = natsUrl ?? natsRootUrl(ctx) ?? (ctx.env.NATS_URL || DEFAULT_NATS_URL);
  const { sendEnvelope } = await import("../../store/nats/index.js");
  const { server, subject, posted } = await sendEnvelope(given, envelope, ctx.natsOptions());
  if (ctx.json) {
    ctx.printJson({ transport: "nats", url: server, subject, channel: envelope.channel, posted });
  } else {
    ctx.out(
      `posted #${posted.seq} to ${posted.channel} in ${posted.namespace} (bridged from ${subject} on ${server})\n`,
    );
  }
}

/** What became of the daemon's envelopes, when it counts them (older daemons do not). */
function envelopesLine(daemon: DaemonInfo | undefined): string {
  const counts = daemon?.envelopes;
  if (!counts) return "";
  const last = counts.lastRefusal;
  const why = last ? ` (last at ${last.at}: ${last.code}: ${last.message})` : "";
  return `envelopes:  ${counts.posted} posted, ${counts.refused} refused${why}\n`;
}

/**
 * The NATS server(s) b00t envelopes go to: a NATS root's own (what its bridge listens on), else
 * `$NATS_URL` (b00t's variable), else the local default. Without credentials: safe to print.
 */
function natsServer(ctx: CliContext): string {
  const spec = ctx.rootSpec;
  if (spec.kind === "nats") return spec.nats.server;
  return ctx.env.NATS_URL || DEFAULT_NATS_URL;
}

/** The root's URL when the root is a NATS namespace (it may carry credentials: never printed). */
function natsRootUrl(ctx: CliContext): string | undefined {
  const spec = ctx.rootSpec;
  return spec.kind === "nats" ? spec.given : undefined;
}

interface SendFlags {
  message: string;
  channel?: string;
  sender?: string;
  metadata?: string;
  transport: string;
  natsUrl?: string;
  socket?: string;
}

/**
 * Whether `socket` is one of our daemons' (and so speaks our request protocol): the root's own
 * socket, any socket in our private socket folder, or one the root's daemon says it listens on
 * (`serve --b00t`). Decided without writing a byte to `socket`.
 */
async function isOurSocket(ctx: CliContext, socket: string): Promise<boolean> {
  const own = ctx.socketPath;
  const target = resolve(socket);
  if (target === resolve(own) || dirname(target) === dirname(resolve(own))) return true;
  if (untrustedSocket(own) !== undefined) return false;
  let client: DaemonClient;
  try {
    client = await DaemonClient.connect(own, { timeoutMs: 1000 });
  } catch (err) {
    if (isAgentChatError(err, "BACKEND_UNAVAILABLE")) return false;
    throw err;
  }
  try {
    return (await client.info()).sockets.some((path) => resolve(path) === target);
  } finally {
    await client.close();
  }
}

/** Writes one bare envelope line, as b00t-cli does, and closes; there is no answer to wait for. */
function writeEnvelopeLine(path: string, envelope: B00tEnvelope): Promise<void> {
  // b00t's field order (seed 002): channel, sender, body, metadata, timestamp.
  const { channel, sender, body, metadata, timestamp } = envelope;
  const line = `${JSON.stringify({ channel, sender, body, metadata, timestamp })}\n`;
  return new Promise((resolvePromise, reject) => {
    const socket = connect(path);
    const fail = (why: string) => {
      clearTimeout(timer);
      socket.destroy();
      reject(
        new AgentChatError("BACKEND_UNAVAILABLE", `cannot send the envelope to ${path} (${why})`),
      );
    };
    const timer = setTimeout(() => fail("no connection within 1000 ms"), 1000);
    socket.once("error", (err: NodeJS.ErrnoException) => fail(err.code ?? err.message));
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.end(line, () => {
        socket.destroy();
        resolvePromise();
      });
    });
  });
}

function parseMetadata(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AgentChatError("INVALID_ARGUMENT", "metadata must be valid JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new AgentChatError("INVALID_ARGUMENT", "metadata must be a JSON object");
  }
  return value as Record<string, unknown>;
}
