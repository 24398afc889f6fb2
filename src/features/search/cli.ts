import { resolve } from "node:path";
import type { Command } from "commander";
import { type CliContext, messageCommand, parsePositiveInt, splitList } from "../../cli/context.js";
import { messageJson } from "../../cli/output.js";
import { AgentChatError } from "../../core/errors.js";
import type { Message } from "../../core/message.js";
import { isUrlRoot } from "../../store/roots.js";
import { flattenThread } from "../../store/shared/index.js";
import type {
  Retention,
  SearchOptions,
  SearchResult,
  Store,
  ThreadNode,
} from "../../store/types.js";
import { parseAge } from "./index.js";

/** search, thread, archive and prune (docs/search.md). */
export function registerFindCommands(program: Command, ctx: CliContext): void {
  registerSearch(program, ctx);
  registerThread(program, ctx);
  registerArchive(program, ctx);
  registerPrune(program, ctx);
}

function registerSearch(program: Command, ctx: CliContext): void {
  program
    .command("search")
    .description("find messages by words in their titles and bodies, newest first")
    .argument("<query...>", 'words, "a phrase", a prefix*; every term must match')
    // Not variadic: `--channel review postgres` must leave `postgres` to the query.
    .option(
      "--channel <names>",
      "only these channels (comma-separated, or repeat --channel)",
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option("--from <agent>", "only messages from this agent")
    .option("--to <agent>", "only messages addressed to this agent by name")
    .option("--status <label>", "only messages with this status")
    .option("--since <when>", "only messages since: 2026-11-01, 2026-11-01T09:30Z or 30d, 12h ago")
    .option("--until <when>", "only messages until (same forms)")
    .option("-n, --limit <n>", "the most hits to print", "20")
    .option("--archived", "search archived messages too")
    .addHelpText(
      "after",
      "\nExamples:\n  agent-chat search postgres migration\n" +
        "  agent-chat search '\"decided on\"' --channel review --since 30d\n" +
        "  agent-chat --json search deploy* --from alice -n 5",
    )
    .action(async (query: string[], opts: SearchFlags) => {
      const store = await ctx.open();
      const result = await store.search(query.join(" "), searchOptions(opts));
      for (const w of result.warnings) ctx.warn(w);
      if (ctx.json) return ctx.printJson({ query: query.join(" "), ...result });
      printHits(ctx, result);
    });
}

function registerThread(program: Command, ctx: CliContext): void {
  messageCommand<{ archived?: boolean }>(program, ctx, {
    name: "thread",
    description: "print the thread a message belongs to: its root and every reply, indented",
    seq: "any message of the thread",
    options: (command) => command.option("--archived", "follow the thread into archived messages"),
    examples: ["agent-chat thread review 12", "agent-chat --json thread review 12"],
    run: async (store, channel, seq, opts) => {
      const tree = await store.thread(channel, seq, { archived: opts.archived === true });
      if (ctx.json) return ctx.printJson({ channel, thread: treeJson(tree) });
      for (const { message, depth } of flattenThread(tree)) ctx.out(formatIndented(message, depth));
    },
  });
}

function registerArchive(program: Command, ctx: CliContext): void {
  program
    .command("archive")
    .description("move old messages out of the channel folder, where chat.py does not look")
    .argument("<channel>")
    .option("--before <seq>", "archive the messages numbered below this")
    .option("--older-than <age>", "archive the messages older than this: 30d, 12h, 2w")
    .option("--dry-run", "list what would move; move nothing")
    .option("--export <dir>", "NATS: export what is dropped into this SPEC folder first")
    .addHelpText(
      "after",
      "\nThe newest message always stays, so chat.py and agent-chat number on alike.\n" +
        "Archived messages stay in peek, search and thread with --archived.\n" +
        "\nExamples:\n  agent-chat archive review --older-than 30d --dry-run\n" +
        "  agent-chat archive review --before 9000",
    )
    .action(async (channel: string, opts: ArchiveFlags) => {
      const store = await retentionStore(
        ctx,
        "archive",
        opts.export !== undefined || opts.dryRun === true,
      );
      const options: Parameters<Retention["archive"]>[1] = {
        dryRun: opts.dryRun === true,
      };
      if (opts.export !== undefined) options.exportTo = resolve(opts.export);
      if (opts.before !== undefined) options.before = parsePositiveInt(opts.before, "--before");
      if (opts.olderThan !== undefined) {
        options.olderThanMs = parseAge(opts.olderThan, "--older-than");
      }
      const result = await store.retention.archive(channel, options);
      if (ctx.json) return ctx.printJson(result);
      const verb = result.dryRun ? "would archive" : "archived";
      const range = seqRange(result.moved);
      ctx.out(
        `${verb} ${result.moved.length} message(s) of ${channel}${range}` +
          `${result.folders.length > 0 ? ` into ${result.folders.join(", ")}` : ""}` +
          `${result.kept === undefined ? "" : `; #${result.kept}, the newest, stays`}\n`,
      );
    });
}

function registerPrune(program: Command, ctx: CliContext): void {
  program
    .command("prune")
    .description(
      "remove the cursors and presence records of agents not seen for a while (listing them first)",
    )
    .requiredOption("--older-than <age>", "not seen for this long: 30d, 2w")
    .option("--dry-run", "list them; remove nothing")
    .addHelpText(
      "after",
      "\nAn agent pruned that comes back reads its channels from the start.\n" +
        "\nExample:\n  agent-chat prune --older-than 30d --dry-run",
    )
    .action(async (opts: { olderThan: string; dryRun?: boolean }) => {
      const store = await retentionStore(ctx, "prune");
      const result = await store.retention.prune({
        olderThanMs: parseAge(opts.olderThan, "--older-than"),
        dryRun: opts.dryRun === true,
      });
      if (ctx.json) return ctx.printJson(result);
      const verb = result.dryRun ? "would remove" : "removed";
      for (const agent of result.removed) {
        ctx.out(`${verb} ${agent.channel}: ${agent.agent} (last seen ${agent.lastSeen})\n`);
      }
      for (const agent of result.presence) {
        ctx.out(`${verb} presence of ${agent.agent} (last seen ${agent.lastSeen})\n`);
      }
      if (result.removed.length + result.presence.length === 0) {
        ctx.err("(no agent is that long gone)\n");
      }
    });
}

interface SearchFlags {
  channel?: string[];
  from?: string;
  to?: string;
  status?: string;
  since?: string;
  until?: string;
  limit: string;
  archived?: boolean;
}

interface ArchiveFlags {
  before?: string;
  olderThan?: string;
  dryRun?: boolean;
  export?: string;
}

function searchOptions(opts: SearchFlags): SearchOptions {
  const options: SearchOptions = { limit: parsePositiveInt(opts.limit, "--limit") };
  const channels = splitList(opts.channel);
  if (channels.length > 0) options.channels = channels;
  for (const key of ["from", "to", "status", "since", "until"] as const) {
    if (opts[key] !== undefined) options[key] = opts[key];
  }
  if (opts.archived) options.archived = true;
  return options;
}

/**
 * Archive and prune move files: they act on the folder itself, never through a daemon (which
 * sees the files go like any other change). A backend without them says so.
 */
async function retentionStore(
  ctx: CliContext,
  verb: "archive" | "prune",
  exporting = false,
): Promise<Store & { retention: Retention }> {
  // On NATS, archive exports what it drops into a folder, then purges it (nats/retention.ts):
  // without that folder it is refused before connecting, whether the server is up or not.
  if (isUrlRoot(ctx.root)) {
    if (verb === "archive" && !exporting) {
      throw new AgentChatError(
        "INVALID_ARGUMENT",
        "on NATS, archive exports what it drops first: give the folder (--export DIR), or --dry-run",
      );
    }
    return withRetention(await ctx.open(), verb);
  }
  return withRetention(await ctx.openFolder(), verb);
}

/** The store, when it archives and prunes; INVALID_ARGUMENT (the store closed) otherwise. */
async function withRetention(
  store: Store,
  verb: "archive" | "prune",
): Promise<Store & { retention: Retention }> {
  if (store.retention) return store as Store & { retention: Retention };
  await store.close();
  throw new AgentChatError("INVALID_ARGUMENT", `${verb} is not available on ${store.location}`);
}

/** Each hit as `channel#seq  time  from → to  [status]`, its title and its snippet. */
function printHits(ctx: CliContext, result: SearchResult): void {
  if (result.hits.length === 0) ctx.err("(no messages match)\n");
  for (const hit of result.hits) {
    const to = hit.to === "all" ? "" : ` → ${hit.to}`;
    const where = hit.archived ? " (archived)" : "";
    ctx.out(`${hit.channel}#${hit.seq}  ${hit.ts}  ${hit.from}${to}  [${hit.status}]${where}\n`);
    ctx.out(`  ${hit.markedTitle}\n  ${hit.snippet}\n`);
  }
  if (result.total > result.hits.length) {
    ctx.err(`(${result.hits.length} of ${result.total} matches; more with --limit)\n`);
  }
}

function seqRange(seqs: number[]): string {
  if (seqs.length === 0) return "";
  return seqs.length === 1 ? ` (#${seqs[0]})` : ` (#${seqs[0]}…#${seqs.at(-1)})`;
}

function treeJson(node: ThreadNode): Record<string, unknown> {
  return { ...messageJson(node.message), replies: node.replies.map(treeJson) };
}

/** A message of a thread: a header line and the body, indented by its depth. */
function formatIndented(message: Message, depth: number): string {
  const pad = "    ".repeat(depth);
  const to = message.to === "all" ? "" : ` → ${message.to}`;
  const reply = message.replyTo === undefined ? "" : ` (reply to #${message.replyTo})`;
  const head = `${pad}#${message.seq} ${message.from}${to} [${message.status}] ${message.ts}${reply}`;
  const lines = [head, `${pad}  ${message.title}`];
  for (const line of message.body.split("\n")) lines.push(line ? `${pad}  | ${line}` : `${pad}  |`);
  return `${lines.join("\n")}\n\n`;
}
