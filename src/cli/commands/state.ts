import type { Command } from "commander";
import { AgentChatError, referenceError } from "../../core/errors.js";
import { validateName } from "../../core/names.js";
import type { ChannelSummary, ChannelSummaryOptions } from "../../store/types.js";
import { type CliContext, speaksReference07 } from "../context.js";

interface StateFlags {
  as?: string;
  from?: string;
  actor?: string;
  write?: boolean;
  audit: boolean;
  strict?: boolean;
  saved?: boolean;
}

/**
 * chat.py 0.7's `state` and `compact` (docs/state.md): the channel's derived summary, which
 * `state` prints and `state --write` or `compact` saves as `state.md`, byte for byte as chat.py
 * writes it, posting its `state.compacted` message.
 */
export function registerStateCommands(program: Command, ctx: CliContext): void {
  const stateCommand = withFlags(
    program
      .command("state")
      .description("print the channel's summary as chat.py 0.7 renders it (--write: save state.md)")
      .argument("<channel>")
      .option("--write", "also replace <channel>/state.md and post state.compacted")
      .option("--save", "chat.py's other name for --write")
      .option("--saved", "print the state.md last written (by either CLI) instead"),
  )
    .addHelpText(
      "after",
      "\nExamples:\n  agent-chat state review\n  agent-chat state review --json | jq .open_tasks\n  agent-chat state review --write --as alice",
    )
    .action(async (channel: string, opts: StateFlags & { save?: boolean }) => {
      const write = Boolean(opts.write || opts.save);
      if (write && opts.saved)
        throw new AgentChatError(
          "INVALID_ARGUMENT",
          "--saved reads state.md; it cannot --write it",
        );
      const state = await summary(ctx, channel, { ...options(ctx, opts), write });
      if (opts.saved) return printSaved(ctx, channel, state);
      if (ctx.json) return ctx.out(`${state.json}\n`);
      ctx.out(write ? `compacted state for ${channel} -> ${channel}/state.md\n` : state.markdown);
    });
  speaksReference07(stateCommand, ctx);
  stateCommand.hook("preAction", (_state, action) => stateChannel(action.args[0]));
  withFlags(
    program
      .command("compact")
      .description("save the channel's summary as <channel>/state.md (chat.py 0.7's compact)")
      .argument("<channel>"),
  ).action(async (channel: string, opts: StateFlags) => {
    const state = await summary(ctx, channel, { ...options(ctx, opts), write: true });
    if (ctx.json) return ctx.out(`${state.json}\n`);
    const { openTasks, pathLocks, decisions } = state.counts;
    ctx.out(
      `compacted state for ${channel} -> ${channel}/state.md (open_tasks=${openTasks}, locks=${pathLocks}, decisions=${decisions})\n`,
    );
  });
}

/** The saved `state.md`, and a warning when it is not what the channel's files say now. */
function printSaved(ctx: CliContext, channel: string, state: ChannelSummary): void {
  const current = state.current === true;
  if (ctx.json) {
    ctx.printJson({
      channel,
      file: `${channel}/state.md`,
      markdown: state.markdown,
      current,
    });
    return;
  }
  if (!current) {
    ctx.err(
      `agent-chat: ${channel}/state.md is not the channel's summary now (stale, or not written by a summary): agent-chat state ${channel} gives it\n`,
    );
  }
  ctx.out(state.markdown);
}

function withFlags(command: Command): Command {
  return command
    .option("--as <name>", "who posts state.compacted (default: $AGENT_CHAT_NAME, else system)")
    .option("--from <name>", "chat.py's name for --as")
    .option("--actor <name>", "chat.py's other name for --as")
    .option("--no-audit", "save state.md without posting state.compacted")
    .option(
      "--strict",
      "refuse (exit 1) when _meta.json, a task or a lock record does not validate",
    );
}

function options(ctx: CliContext, opts: StateFlags): ChannelSummaryOptions {
  const actor = opts.as ?? opts.from ?? opts.actor ?? (ctx.env.AGENT_CHAT_NAME || undefined);
  return {
    audit: opts.audit,
    strict: Boolean(opts.strict),
    saved: Boolean(opts.saved),
    ...(actor === undefined ? {} : { actor }),
  };
}

/**
 * The summary from the folder store: through a daemon the root is the same folder, read here
 * directly (the summary is derived from files; `state.compacted` is an ordinary post).
 */
async function summary(
  ctx: CliContext,
  channel: string,
  options: ChannelSummaryOptions,
): Promise<ChannelSummary> {
  const store = await ctx.openWith(
    "chatpy07",
    "state is chat.py 0.7's summary of a channel folder: it needs a folder root",
  );
  const state = await store.chatpy07.channelState(channel, options);
  for (const p of state.problems) ctx.err(`agent-chat: ${p}; left out of the summary\n`);
  return state;
}

/**
 * chat.py refuses a channel name off the rules as a state error (`STATE_INVALID_CHANNEL`, exit 1),
 * where ours would call it a usage error.
 */
function stateChannel(channel: string | undefined): void {
  try {
    validateName("channel", channel);
  } catch (err) {
    if (!(err instanceof AgentChatError)) throw err;
    throw referenceError(err.code, "STATE_INVALID_CHANNEL", err.message);
  }
}
