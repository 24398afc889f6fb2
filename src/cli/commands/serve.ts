import { dirname } from "node:path";
import type { DaemonLogEvent, DaemonOptions } from "../../daemon/server.js";
import { canonicalRoot } from "../../store/roots.js";
import type { Store } from "../../store/types.js";
import { parseListenAddress } from "../../viewer/address.js";
import { type CliContext, parsePositiveInt } from "../context.js";
import { oneOf } from "../usage.js";

export interface ServeFlags {
  socket?: string;
  b00t?: boolean;
  autoCreate: boolean;
  maxLine?: string;
  maxInput?: string;
  http?: string | true;
  httpAllowRemote?: boolean;
  log?: string;
}

/**
 * How much `serve` says on stderr: `info` each envelope posted (channel, sender, body size) and
 * each refused line; `warn` only the refusals. Refusals are never silenced: nobody else hears
 * of them, since a b00t client reads no answer.
 */
export const LOG_LEVELS = ["info", "warn"] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

/** Says where the socket goes when another user took the shared socket folder first. */
function warnIfFolderTaken(ctx: CliContext, socketPath: string): void {
  const shared = ctx.sharedSocketPath;
  if (shared === socketPath) return;
  ctx.warn(
    `the socket folder ${dirname(shared)} is not yours (another user made it first, or it is a ` +
      `link): serving at ${socketPath} instead, where every command of yours looks too`,
  );
}

/** `agent-chat serve`: runs the daemon until Ctrl-C or SIGTERM. */
export async function runServe(ctx: CliContext, opts: ServeFlags, version: string): Promise<void> {
  const { DaemonServer } = await import("../../daemon/server.js");
  const socketPath = opts.socket ?? ctx.socketPath;
  if (opts.socket === undefined) warnIfFolderTaken(ctx, socketPath);
  const level = logLevel(ctx, opts.log);
  const http =
    opts.http === undefined ? undefined : parseListenAddress(opts.http === true ? "" : opts.http);
  // The daemon verifies for its clients but signs for none of them (docs/signatures.md).
  const store = await ctx.openFolder();
  const options = daemonOptions(ctx, opts, store, version);
  options.log = (event) => {
    if (event.event === "refused" || level === "info") logEvent(ctx, event);
  };
  const server = new DaemonServer(options);
  let viewer: { url: string; close(): Promise<void> } | undefined;
  try {
    await server.listen(socketPath);
    if (opts.b00t) await server.listen(ctx.b00tSocketPath, dirname(socketPath));
    if (http) {
      const { startViewer } = await import("../../viewer/server.js");
      const { viewerPanels } = await import("../plugins/viewer-panels.js");
      const allowRemote = opts.httpAllowRemote === true;
      viewer = await startViewer({ store, ...http, allowRemote, panels: viewerPanels });
    }
  } catch (err) {
    await server.close();
    await store.close();
    throw err;
  }
  announce(ctx, options.root, server.sockets, viewer?.url);
  await new Promise<void>((resolve) => {
    if (ctx.abort.signal.aborted) resolve();
    ctx.abort.signal.addEventListener("abort", () => resolve(), { once: true });
  });
  await viewer?.close();
  await server.close();
  await store.close();
  if (!ctx.json) ctx.err("agent-chat: daemon stopped\n");
}

function daemonOptions(
  ctx: CliContext,
  opts: ServeFlags,
  store: Store,
  version: string,
): DaemonOptions {
  const options: DaemonOptions = {
    store,
    root: canonicalRoot(ctx.rootSpec),
    version,
    autoCreate: opts.autoCreate,
  };
  if (opts.maxLine !== undefined) {
    options.maxLineBytes = parsePositiveInt(opts.maxLine, "--max-line");
  }
  if (opts.maxInput !== undefined) {
    options.maxBufferedBytes = parsePositiveInt(opts.maxInput, "--max-input");
  }
  return options;
}

/** `--log`, else `$AGENT_CHAT_LOG_LEVEL`, else `info`. */
function logLevel(ctx: CliContext, flag: string | undefined): LogLevel {
  if (flag !== undefined) return oneOf(flag, LOG_LEVELS, "--log");
  const env = ctx.env.AGENT_CHAT_LOG_LEVEL;
  if (env === undefined || env === "") return "info";
  return oneOf(env, LOG_LEVELS, "AGENT_CHAT_LOG_LEVEL");
}

function announce(ctx: CliContext, root: string, sockets: string[], url: string | undefined) {
  if (ctx.json) {
    ctx.printJson({
      event: "listening",
      root,
      sockets,
      pid: process.pid,
      ...(url ? { url } : {}),
    });
    return;
  }
  ctx.out(`agent-chat daemon (pid ${process.pid}) serving ${root}\n`);
  for (const path of sockets) ctx.out(`listening on ${path}\n`);
  if (url) ctx.out(`viewer at ${url}\n`);
}

/** One line on stderr: JSON with `--json`, else words. */
function logEvent(ctx: CliContext, event: DaemonLogEvent): void {
  ctx.err(ctx.json ? `${JSON.stringify(event)}\n` : `agent-chat: ${describeEvent(event)}\n`);
}

function describeEvent(event: DaemonLogEvent): string {
  if (event.event === "refused") {
    const names = [
      event.channel === undefined ? "" : `channel ${JSON.stringify(event.channel)}`,
      event.sender === undefined ? "" : `sender ${JSON.stringify(event.sender)}`,
    ].filter((part) => part !== "");
    const about = names.length > 0 ? ` (${names.join(", ")})` : "";
    return `${event.at} refused a line${about}: ${event.code}: ${event.message}`;
  }
  const channel =
    event.channel === event.sentChannel
      ? event.channel
      : `${event.channel} (sent as ${JSON.stringify(event.sentChannel)})`;
  const from = event.from === event.sender ? event.from : `${event.from} (${event.sender})`;
  return `${event.at} envelope #${event.seq} to ${channel} from ${from}, ${event.bytes} bytes`;
}
