import type { Command } from "commander";
import { isAgentChatError } from "../../core/errors.js";
import { readReferenceEvent, referenceEvent } from "../../core/reference-event.js";
import { wholeChannel } from "../../store/paging.js";
import { type CliContext, speaksReference07 } from "../context.js";
import { oneOf } from "../usage.js";

const TYPES = ["capability", "status"] as const;
const STATUSES = ["ready", "busy", "idle", "blocked", "stopped"] as const;

interface PostFlags {
  as?: string;
  from?: string;
  type: string;
  harness: string;
  status?: string;
  detail?: string;
  primitives?: string[];
}

/** chat.py 0.7's `event post|read`: adapter-neutral capability and status events. */
export function registerEventCommands(program: Command, ctx: CliContext): void {
  const event = program
    .command("event")
    .description("post or read chat.py 0.7's capability and status events (event.* messages)");
  event
    .command("post")
    .description("post an event.capability or event.status message in chat.py's format")
    .argument("<channel>")
    .requiredOption("--type <type>", `${TYPES.join(" | ")}`)
    .requiredOption(
      "--harness <name>",
      "the harness the agent runs in (claude-code, codex, cli, …)",
    )
    .option("--as <name>", "who posts (default: $AGENT_CHAT_NAME)")
    .option("--from <name>", "chat.py's name for --as")
    .option("--status <status>", `status events: ${STATUSES.join(" | ")}`)
    .option("--detail <text>", "status events: one line more")
    .option(
      "--primitives <list>",
      "capability events: what the agent can do (repeat, or a comma list; default all)",
      (v: string, prev: string[] = []) => [
        ...prev,
        ...v
          .split(",")
          .map((p) => p.trim())
          .filter(Boolean),
      ],
    )
    .addHelpText(
      "after",
      "\nExamples:\n  agent-chat event post review --type status --harness cli --status busy --as bob\n" +
        "  agent-chat event post review --type capability --harness codex --primitives tasks,leases --as bob",
    )
    .action(async (channel: string, opts: PostFlags) => {
      const from = ctx.agent(opts.as ?? opts.from);
      const type = oneOf(opts.type, TYPES, "--type") as (typeof TYPES)[number];
      if (type === "status") oneOf(opts.status ?? "", STATUSES, "--status");
      const message = referenceEvent({
        type,
        agent: from,
        harness: opts.harness,
        ...(opts.status === undefined ? {} : { status: opts.status }),
        ...(opts.detail === undefined ? {} : { detail: opts.detail }),
        ...(opts.primitives === undefined ? {} : { primitives: opts.primitives }),
        ts: new Date().toISOString().replace(/\.\d{3}Z$/, "+00:00"),
      });
      const posted = await (await ctx.open()).post(channel, { from, to: "all", ...message });
      if (ctx.json) return ctx.printJson(posted);
      ctx.out(`posted event ${type} -> ${channel} (#${posted.seq})\n`);
    });
  event
    .command("read")
    .description("print the channel's valid events, one JSON line each (moves no cursor)")
    .argument("<channel>")
    .option("--type <type>", `only ${TYPES.join(" or ")} events`)
    .action(async (channel: string, opts: { type?: string }) => {
      if (opts.type !== undefined) oneOf(opts.type, TYPES, "--type");
      const store = await ctx.open();
      // Every message, as chat.py reads them, and no reader recorded (no cursor, no receipt).
      const messages = await wholeChannel(store, channel);
      for (const message of messages) {
        const value = eventOf(message, ctx);
        if (value === undefined || (opts.type !== undefined && value.event !== opts.type)) continue;
        ctx.out(`${pythonJson(value)}\n`);
      }
    });
  for (const command of event.commands) speaksReference07(command, ctx);
}

/** The message's event, or undefined when it is none; an invalid one is named on stderr. */
function eventOf(
  message: { seq: number; status: string; body: string },
  ctx: CliContext,
): Record<string, unknown> | undefined {
  try {
    return readReferenceEvent(message.status, message.body);
  } catch (err) {
    // chat.py's `event read` fails for the whole channel here; ours names it and goes on.
    if (!isAgentChatError(err)) throw err;
    ctx.err(`agent-chat: #${message.seq} is no valid event: ${err.message}\n`);
    return undefined;
  }
}

/** JSON as chat.py prints it (Python's `json.dumps(…, sort_keys=True)`: `", "` and `": "`). */
function pythonJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pythonJson(v)}`).join(", ")}}`;
  }
  return JSON.stringify(value);
}
