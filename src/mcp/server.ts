import type { Readable, Writable } from "node:stream";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { type FooterStyle, formatFooter, UnreadCounter } from "../client/unread.js";
import { memberChannels, waitEverywhere } from "../client/wait-all.js";
import { AgentChatError, isAgentChatError } from "../core/errors.js";
import type { Message } from "../core/message.js";
import { isMember } from "../core/meta.js";
import { validateName } from "../core/names.js";
import { safeLine } from "../core/safe-text.js";
import { NotifiedRecorder, OwedCounter, presenceLine } from "../features/delivery/mcp.js";
import { leaseAction } from "../features/leases/mcp.js";
import { findText } from "../features/search/mcp.js";
import {
  DEFAULT_WAIT_TIMEOUT_MS,
  type PostInput,
  type ReadResult,
  type Store,
  type WaitResult,
} from "../store/types.js";
import { MCP_READ_LIMIT, moreText, ReadBudget, shownWithin } from "./bounded.js";
import {
  CHANNEL_CAPABILITY,
  CHANNEL_METHOD,
  pushChannelMessages,
  pushStart,
} from "./channel-push.js";
import { FooterTransport } from "./footer-transport.js";
import { describeError, formatMessages, formatTasks, noIdentityText } from "./format.js";
import { BoundedStdioTransport } from "./stdio-transport.js";

export interface McpServerOptions {
  store: Store;
  /**
   * Whose cursors, relevance and claims these are. Without one (or with an invalid name) the
   * server still starts, and every tool call answers how to set it (see noIdentityText): a
   * server that exits is shown by hosts only as "Failed to connect".
   */
  agent: string | undefined;
  footer: FooterStyle;
  version: string;
  input: Readable;
  output: Writable;
  /** Stops the server (e.g. on SIGTERM). */
  signal?: AbortSignal;
  /** The longest JSON-RPC line accepted (default 8 MiB); a longer one gets a JSON-RPC error. */
  maxMessageBytes?: number;
  /** Told about input the server refused (the CLI prints it on stderr). */
  warn?: (message: string) => void;
  /**
   * Tools offered after the built-in chat_* tools, in this order. Other parts of agent-chat
   * plug in here rather than being imported by the MCP server (docs/design.md §3): the CLI adds
   * chat_workspace (src/cli/plugins/mcp-tools.ts).
   */
  tools?: readonly McpTool[];
  /**
   * chat_wait's sleep-poll safety net behind the store's own wake-up (default: the store's,
   * 2 s). Tests set it far beyond their limit to prove that the wake-up alone answers.
   */
  waitIntervalMs?: number;
  /** Claude Code channels: push each new message for the agent (see channel-push.ts). */
  channelPush?: boolean;
}

/** A tool plugged into the MCP server; its result text gets the same footer as every tool's. */
export interface McpTool<S extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  description: string;
  inputSchema: S;
  /** Required and truthful: Codex asks approval for a tool without them (see TOOL_HINTS). */
  annotations: ToolAnnotations;
  /** Returns the result's text; an error becomes an `isError` result (see describeError). */
  run(args: z.infer<z.ZodObject<S>>, context: McpToolContext): Promise<string>;
}

export interface McpToolContext {
  store: Store;
  /** Whose call this is. */
  agent: string;
  /** Aborted when the client cancels the call or the server stops. */
  signal: AbortSignal;
}

/**
 * The annotations of the tools. Codex runs a tool unasked only when it is read-only, or declares
 * itself neither destructive nor open-world; under `codex exec` an approval request fails the
 * call. Every tool touches only the agent-chat root, hence never open-world.
 */
export const TOOL_HINTS = {
  /** Changes nothing at all: no message, cursor, claim or file. */
  readOnly: { readOnlyHint: true, openWorldHint: false },
  /** Adds (a message, a channel, a claim) or moves the caller's own cursor; removes nothing. */
  additive: {
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: false,
  },
} as const satisfies Record<string, ToolAnnotations>;

/** Long enough to be useful, short enough for every client's default tool timeout (60 s). */
export const DEFAULT_WAIT_SECONDS = 50;
export const MAX_WAIT_SECONDS = DEFAULT_WAIT_TIMEOUT_MS / 1000;
/** While a wait is pending, a client that sent a progress token hears from us this often. */
const PROGRESS_EVERY_MS = 15_000;

type Handler<A> = (args: A, extra: ToolExtra) => Promise<string>;
interface ToolExtra {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number } | undefined;
  sendNotification: (n: {
    method: "notifications/progress";
    params: {
      progressToken: string | number;
      progress: number;
      total?: number;
      message?: string;
    };
  }) => Promise<void>;
}

/** Runs the MCP server over the given streams until the input ends or the signal aborts. */
export async function runMcpServer(options: McpServerOptions): Promise<void> {
  const { store } = options;
  const problem = identityProblem(options.agent);
  // Without a usable identity no handler runs (each call is refused with `problem` first).
  const agent = problem === undefined ? (options.agent ?? "") : "";
  const server = new McpServer(
    { name: "agent-chat", version: options.version },
    {
      ...(options.channelPush && {
        capabilities: { experimental: { [CHANNEL_CAPABILITY]: {} } },
      }),
      instructions:
        problem !== undefined
          ? noIdentityText(problem)
          : `You are "${agent}" in agent-chat: channels of messages shared with other agents and people. ` +
            "Every tool result ends with a footer counting your unread messages. One channel per topic; " +
            "claim a task before you work on it; use chat_wait to wait for an answer instead of " +
            "checking again and again; reply with a new message (reply_to) rather than editing.",
    },
  );

  const stdio = new BoundedStdioTransport(options.input, options.output, {
    ...(options.maxMessageBytes !== undefined ? { maxMessageBytes: options.maxMessageBytes } : {}),
    ...(options.warn ? { warn: options.warn } : {}),
  });
  const counter = new UnreadCounter(store, agent);
  const notified = new NotifiedRecorder(store, agent);
  const owed = new OwedCounter(store, agent);
  registerTools(
    server,
    store,
    agent,
    counter,
    options.tools ?? [],
    problem,
    options.waitIntervalMs,
  );
  const transport = new FooterTransport(stdio, async () => {
    // Becomes the footer's note "(agent-chat: unread count unavailable: …)".
    if (problem !== undefined) throw new Error("no identity");
    const count = await counter.count();
    const owes = await owed.total();
    if (owes > 0) count.owes = owes;
    // The footer tells the session what waits: that is the messages' "notified" step.
    await notified.told(counter.upTo);
    return formatFooter(count, options.footer);
  });
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
  });
  const push = new AbortController();
  if (options.channelPush && problem === undefined) {
    // Messages from now on are new; pushing starts once the client is ready to hear them.
    const start = await pushStart(store);
    server.server.oninitialized = () => {
      pushChannelMessages(store, agent, {
        start,
        signal: push.signal,
        send: (params) => server.server.notification({ method: CHANNEL_METHOD, params }),
      }).catch((err: unknown) => options.warn?.(`channel push stopped: ${(err as Error).message}`));
    };
  }
  const stop = () => {
    server.close().catch(() => {});
  };
  // The SDK's stdio transport does not notice the end of its input; the client going away must
  // stop the server, or the store's file watches would keep the process alive.
  options.input.once("end", stop);
  options.input.once("close", stop);
  options.signal?.addEventListener("abort", stop, { once: true });
  try {
    await server.connect(transport);
    if (options.signal?.aborted) stop();
    await closed;
  } finally {
    push.abort();
    options.input.off("end", stop);
    options.input.off("close", stop);
    options.signal?.removeEventListener("abort", stop);
  }
}

/** chat_read asked to find messages rather than read new ones. */
function isFind(args: { search?: string | undefined; thread?: number | undefined }): boolean {
  return args.search !== undefined || args.thread !== undefined;
}

/** Registers one tool: refused without an identity, its errors told as a tool error. */
type ToolRegistrar = <S extends z.ZodRawShape>(
  name: string,
  description: string,
  inputSchema: S,
  annotations: ToolAnnotations,
  handler: Handler<z.infer<z.ZodObject<S>>>,
) => void;

const channel = z.string().describe("Channel name, e.g. review");

function toolRegistrar(server: McpServer, problem: string | undefined): ToolRegistrar {
  return <S extends z.ZodRawShape>(
    name: string,
    description: string,
    inputSchema: S,
    annotations: ToolAnnotations,
    handler: Handler<z.infer<z.ZodObject<S>>>,
  ) => {
    // Loose, so that what a model made up reaches us and is refused by name (below): a strict
    // schema's refusal is the SDK's raw report, and a plain one drops the key without a word
    // (`chat_post {"recipient": "bob"}` posted to everyone).
    const loose = z.looseObject(inputSchema);
    server.registerTool(name, { description, inputSchema: loose, annotations }, (async (
      args: z.infer<z.ZodObject<S>>,
      extra: ToolExtra,
    ): Promise<CallToolResult> => {
      if (problem !== undefined) {
        return { content: [{ type: "text", text: noIdentityText(problem) }], isError: true };
      }
      const unknown = Object.keys(args).filter((key) => !Object.hasOwn(inputSchema, key));
      if (unknown.length > 0) {
        return {
          content: [{ type: "text", text: unknownArguments(name, unknown, inputSchema) }],
          isError: true,
        };
      }
      try {
        return { content: [{ type: "text", text: await handler(args, extra) }] };
      } catch (err) {
        return { content: [{ type: "text", text: describeError(err).text }], isError: true };
      }
      // The SDK's callback type is computed from the concrete shape; for a shape generic here it
      // does not resolve, although the value matches it for every S.
    }) as never);
  };
}

/** The refusal of arguments a tool does not take, naming those it does. */
function unknownArguments(tool: string, unknown: string[], shape: z.ZodRawShape): string {
  const names = unknown.map((key) => JSON.stringify(key.slice(0, 40))).join(", ");
  const takes = Object.keys(shape);
  const meant = unknown.flatMap((key) => {
    const right = meantArgument(key, takes);
    return right === undefined ? [] : [`${JSON.stringify(key.slice(0, 40))} is ${right} here`];
  });
  const hint = meant.length > 0 ? ` (${meant.join(", ")})` : "";
  return `${tool} takes no argument ${names}${hint}; it takes: ${takes.join(", ") || "none"}. Nothing was done: call it again with those.`;
}

/** Names a model reaches for that mean one of ours (another tool's, or a common word). */
const ARGUMENT_SYNONYMS: Record<string, string> = {
  recipient: "to",
  recipients: "to",
  message: "body",
  text: "body",
  reply: "reply_to",
  in_reply_to: "reply_to",
  timeout: "timeout_seconds",
};

/**
 * The argument a misspelt or other tool's name most likely meant: a synonym, or one of the
 * tool's own names that it is a form of (`channel` for `channels`, `timeout` for
 * `timeout_seconds`).
 */
function meantArgument(key: string, takes: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  const synonym = ARGUMENT_SYNONYMS[lower];
  if (synonym !== undefined && takes.includes(synonym)) return synonym;
  return takes.find((name) => name.startsWith(lower) || lower.startsWith(name));
}

function registerTools(
  server: McpServer,
  store: Store,
  agent: string,
  counter: UnreadCounter,
  extraTools: readonly McpTool[],
  problem: string | undefined,
  waitIntervalMs: number | undefined,
): void {
  const tool = toolRegistrar(server, problem);
  registerChatChannels(tool, store, agent, counter);
  registerChatCreateChannel(tool, store);
  registerChatPost(tool, store, agent);
  registerChatRead(tool, store, agent);
  registerChatWait(tool, store, agent, waitIntervalMs);
  registerChatTasks(tool, store, agent);
  for (const extra of extraTools) {
    tool(extra.name, extra.description, extra.inputSchema, extra.annotations, (args, { signal }) =>
      extra.run(args, { store, agent, signal }),
    );
  }
}

function registerChatChannels(
  tool: ToolRegistrar,
  store: Store,
  agent: string,
  counter: UnreadCounter,
): void {
  tool(
    "chat_channels",
    "List the channels with your unread count in each, their members (waiting, active, gone) and topic, and what you owe an answer.",
    {},
    // Counts unread with peeks: moves no cursor, writes nothing.
    TOOL_HINTS.readOnly,
    async () => {
      const list = await store.channels();
      if (list.length === 0) {
        return "No channels yet. Create one per topic with chat_create_channel.";
      }
      const unread = await counter.count();
      const lines = [];
      for (const c of list) {
        const mine = isMember({ ...c, channel: c.name }, agent);
        const members = mine
          ? await presenceLine(store, c.name, agent)
          : c.members.join(",") || "open";
        const state = mine ? `${unread.channels[c.name] ?? 0} unread` : "not a member";
        // Members and topic are _meta.json's, which any member may write: one line each.
        const topic = c.topic ? ` · ${safeLine(c.topic)}` : "";
        lines.push(
          `${c.name} · ${state} · last #${c.lastSeq} · members ${safeLine(members)}${topic}`,
        );
      }
      return lines.join("\n");
    },
  );
}

function registerChatCreateChannel(tool: ToolRegistrar, store: Store): void {
  tool(
    "chat_create_channel",
    "Create a channel for one topic. Fails with CHANNEL_EXISTS if it is already there.",
    {
      name: channel,
      members: z
        .array(z.string())
        .optional()
        .describe("Who may take part; omit for a channel open to everyone"),
      topic: z.string().optional().describe("What the channel is for, one line"),
    },
    // Again with the same name: CHANNEL_EXISTS, and the channel stays as it was.
    { ...TOOL_HINTS.additive, idempotentHint: true },
    async ({ name, members, topic }) => {
      const meta = await store.init(name, { members: members ?? [], topic: topic ?? "" });
      const who = meta.members.length > 0 ? meta.members.join(", ") : "everyone";
      return `Created channel ${name} (open to ${who}).`;
    },
  );
}

function registerChatPost(tool: ToolRegistrar, store: Store, agent: string): void {
  tool(
    "chat_post",
    "Post a message to a channel. Returns its number (seq).",
    {
      channel,
      body: z.string().describe("The message, markdown"),
      title: z.string().optional().describe("One line; default: the body's first line"),
      to: z.string().optional().describe("Recipients, comma-separated; omit for everyone"),
      reply_to: z.number().int().positive().optional().describe("The seq this answers"),
      status: z
        .string()
        .optional()
        .describe("discussion (default), proposal, question, ack, done, blocked…"),
    },
    // Each call adds one more message: additive, not idempotent.
    TOOL_HINTS.additive,
    async (args) => {
      const input: PostInput = { from: agent, body: args.body };
      if (args.title !== undefined) input.title = args.title;
      if (args.to !== undefined) input.to = args.to;
      if (args.reply_to !== undefined) input.replyTo = args.reply_to;
      if (args.status !== undefined) input.status = args.status;
      const result = await store.post(args.channel, input);
      return `Posted #${result.seq} to ${result.channel}.`;
    },
  );
}

function registerChatRead(tool: ToolRegistrar, store: Store, agent: string): void {
  tool(
    "chat_read",
    "Read the messages for you since your cursor, then advance it. " +
      "Without channel: every channel you belong to. " +
      "With search or thread it finds messages instead and moves no cursor. " +
      "A sender marked (FORGED) did not write that message.",
    {
      channel: channel.optional(),
      all: z.boolean().optional().describe("From the beginning, not from your cursor"),
      peek: z.boolean().optional().describe("Do not advance your cursor"),
      search: z
        .string()
        .optional()
        .describe('Words to find, newest first: word "a phrase" prefix*'),
      thread: z.number().int().positive().optional().describe("A seq: its whole reply thread"),
    },
    // Not read-only: it advances the agent's cursor (unless peek). Nothing is lost (all=true
    // reads again), but a retried call no longer returns what the first one delivered.
    TOOL_HINTS.additive,
    async (args) => {
      // A search without a channel looks where a read would: the agent's channels.
      const names = args.channel ? [args.channel] : await memberChannels(store, agent);
      if (isFind(args)) return findText(store, { ...args, channels: names });
      return readText(store, agent, names, args);
    },
  );
}

/**
 * chat_read's reads, bounded (docs/mcp.md, "Bounded results"): each moves its cursor only past
 * what it returned; the channels left once the bound is spent are not read at all.
 */
async function readText(
  store: Store,
  agent: string,
  names: readonly string[],
  args: { channel?: string | undefined; all?: boolean | undefined; peek?: boolean | undefined },
): Promise<string> {
  const messages: Message[] = [];
  const warnings: string[] = [];
  const budget = new ReadBudget();
  const unreadIn: string[] = [];
  let more = 0;
  for (const name of names) {
    const limit = budget.left();
    if (limit === undefined) {
      unreadIn.push(name);
      continue;
    }
    const options = { as: agent, all: args.all === true, peek: args.peek === true, limit };
    let result: ReadResult;
    try {
      result = await store.read(name, options);
    } catch (err) {
      // One channel that cannot be read must not cost the others what they delivered.
      if (args.channel) throw err;
      warnings.push(`${name}: ${(err as Error).message}; skipped`);
      continue;
    }
    budget.spend(result.messages);
    more += result.more ?? 0;
    messages.push(...result.messages);
    warnings.push(...result.warnings.map((w) => `${name}: ${w}`));
  }
  const text = messages.length === 0 ? "No new messages." : formatMessages(shownWithin(messages));
  return withWarnings(text + moreText(more, unreadIn, args.peek === true), warnings);
}

function registerChatWait(
  tool: ToolRegistrar,
  store: Store,
  agent: string,
  waitIntervalMs: number | undefined,
): void {
  tool(
    "chat_wait",
    "Block until a message for you arrives (costs no tokens while waiting), then read it. " +
      "Prefer this over calling chat_read repeatedly.",
    {
      channels: z
        .array(z.string())
        .optional()
        .describe("Channels to watch; omit for all yours, new ones included"),
      timeout_seconds: z
        .number()
        .min(1)
        .max(MAX_WAIT_SECONDS)
        .optional()
        .describe(`Give up after this long (default ${DEFAULT_WAIT_SECONDS})`),
    },
    // Reads what arrives and advances the cursor, as chat_read does.
    TOOL_HINTS.additive,
    async (args, extra) => {
      const given = args.channels && args.channels.length > 0 ? args.channels : undefined;
      const interval = waitIntervalMs === undefined ? {} : { intervalMs: waitIntervalMs };
      const seconds = args.timeout_seconds ?? DEFAULT_WAIT_SECONDS;
      const timeoutMs = Math.round(seconds * 1000);
      const stopProgress = reportProgress(extra, seconds);
      const options = { timeoutMs, signal: extra.signal, limit: MCP_READ_LIMIT, ...interval };
      try {
        const result = given
          ? await store.wait(given, { as: agent, ...options })
          : await waitEverywhere(store, agent, options);
        return waitText(result);
      } catch (err) {
        if (!isAgentChatError(err, "TIMEOUT")) throw err;
        return timeoutText(given ?? (await memberChannels(store, agent)), seconds);
      } finally {
        stopProgress();
      }
    },
  );
}

/** What chat_wait returns: the messages, as bounded (docs/mcp.md, "Bounded results"). */
function waitText(result: WaitResult): string {
  const text = formatMessages(shownWithin(result.messages));
  return withWarnings(text + moreText(result.more ?? 0, [], false), result.warnings);
}

/** A wait that timed out is an answer, not an error: where it waited, and what to do next. */
function timeoutText(names: readonly string[], seconds: number): string {
  const where = names.length > 0 ? ` in ${names.join(", ")}` : "";
  const none =
    names.length > 0
      ? ""
      : " You belong to no channel yet: create one with chat_create_channel, or wait for someone to add you.";
  return `TIMEOUT: no message for you${where} within ${seconds} s.${none} Call chat_wait again, or carry on with other work.`;
}

function registerChatTasks(tool: ToolRegistrar, store: Store, agent: string): void {
  tool(
    "chat_tasks",
    "Task markers of a channel. list: all tasks; add: create one (title); " +
      "claim: take one before working on it (exactly one claimant wins; a lease your activity " +
      "in the channel keeps alive); renew: extend it; done: finish yours (note); release: give " +
      "it back. lease: reserve files (paths) so other agents' commits there are refused; " +
      "leases: list; unlease: release one.",
    {
      action: z
        .enum(["list", "add", "claim", "renew", "done", "release", "lease", "leases", "unlease"])
        .describe("What to do"),
      channel,
      task: z
        .string()
        .optional()
        .describe("Task id, for claim, renew, done and release (add: optional id)"),
      title: z.string().optional().describe("For add: what is to be done"),
      body: z
        .string()
        .optional()
        .describe("For add: details, markdown; for done: a short note; for lease: why"),
      paths: z
        .string()
        .optional()
        .describe(
          "For lease: a repository-relative glob (* ** ? [abc] {a,b}), e.g. src/api/**; unlease: it or its token",
        ),
    },
    // add creates a task, claim marks it; release gives back only the caller's own claim and
    // the task stays: nothing of anyone else's is removed.
    TOOL_HINTS.additive,
    async (args) => {
      switch (args.action) {
        case "list":
          return formatTasks(args.channel, await store.tasks(args.channel));
        case "add": {
          if (!args.title) {
            throw new AgentChatError("INVALID_ARGUMENT", "action add needs a title");
          }
          const input: Parameters<Store["addTask"]>[1] = {
            title: args.title,
            body: args.body ?? "",
            from: agent,
          };
          if (args.task) input.id = args.task;
          const info = await store.addTask(args.channel, input);
          return `Added task ${info.id} in ${args.channel}: ${info.title}`;
        }
        case "claim": {
          const info = await store.claim(args.channel, requireTask(args), agent);
          return (
            `Claimed task ${info.id} in ${args.channel} (token ${info.token}): it is yours while ` +
            "you stay active in the channel; mark it done when finished, release it if you stop."
          );
        }
        case "done": {
          const note = args.body?.trim() ? { note: args.body } : {};
          const info = await store.done(args.channel, requireTask(args), agent, note);
          return `Done: task ${info.id} in ${args.channel}.`;
        }
        case "release": {
          const info = await store.release(args.channel, requireTask(args), agent);
          return `Released task ${info.id} in ${args.channel}.`;
        }
        default:
          return leaseAction(store, agent, { ...args, action: args.action });
      }
    },
  );
}

/** Files that look like messages but do not parse are never delivered; the agent hears of them. */
function withWarnings(text: string, warnings: readonly string[]): string {
  if (warnings.length === 0) return text;
  return `${text}\n\nSkipped (not well-formed messages): ${warnings.join("; ")}`;
}

function requireTask(args: { action: string; task?: string | undefined }): string {
  if (!args.task) {
    throw new AgentChatError("INVALID_ARGUMENT", `action ${args.action} needs task (the task id)`);
  }
  return args.task;
}

/** Why this server cannot act, or undefined when its identity is a valid name. */
function identityProblem(agent: string | undefined): string | undefined {
  if (!agent) return "it was started without an identity (no --as, no AGENT_CHAT_NAME)";
  try {
    validateName("agent", agent);
    return undefined;
  } catch (err) {
    return `its identity is not a valid name: ${(err as Error).message}`;
  }
}

/** Progress notifications keep clients that reset their timeout on progress from giving up. */
function reportProgress(extra: ToolExtra, seconds: number): () => void {
  const token = extra._meta?.progressToken;
  if (token === undefined) return () => {};
  const started = Date.now();
  const timer = setInterval(() => {
    const waited = Math.round((Date.now() - started) / 1000);
    extra
      .sendNotification({
        method: "notifications/progress",
        params: {
          progressToken: token,
          progress: waited,
          total: seconds,
          message: `waited ${waited} of ${seconds} s`,
        },
      })
      .catch(() => {});
  }, PROGRESS_EVERY_MS);
  return () => clearInterval(timer);
}
