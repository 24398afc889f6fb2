import type { Command } from "commander";
import type { NatsStore } from "../../store/nats/index.js";
import { isNatsUrl } from "../../store/roots.js";
import type { TransferSummary } from "../../store/transfer.js";
import { type CliContext, splitList, UsageError } from "../context.js";

/** export / import between a NATS namespace and the SPEC folder, and the b00t envelope bridge. */
export function registerNatsCommands(program: Command, ctx: CliContext): void {
  registerTransfer(program, ctx, EXPORT);
  registerTransfer(program, ctx, IMPORT);
  registerBridge(program, ctx);
}

/** What tells export from import: the way round, the words and the transfer that runs. */
interface TransferCommand {
  name: "export" | "import";
  description: string;
  /** The two arguments, in order: the NATS URL is `<source>` of export, `<target>` of import. */
  args: readonly [[string, string], [string, string]];
  help: string;
  run: (
    transfer: TransferModule,
    store: NatsStore,
    dir: string,
    only?: string[],
  ) => Promise<TransferSummary>;
}

type TransferModule = typeof import("../../store/transfer.js");

const EXPORT: TransferCommand = {
  name: "export",
  description: "write a NATS namespace out as the SPEC folder (for chat.py, git, backups)",
  args: [
    ["<source>", "nats://host:port/namespace"],
    ["<dir>", "folder to write; channels already in it are never overwritten"],
  ],
  help:
    "\nCredentials come from AGENT_CHAT_NATS_USER/PASS, _TOKEN, _CREDS, _CA/_CERT/_KEY or\n" +
    "AGENT_CHAT_NATS_CONFIG (see docs/nats.md), never from the command line.\n" +
    "\nExamples:\n  agent-chat export nats://127.0.0.1:4222/team-a ./team-a\n" +
    "  agent-chat --json export nats://nats.lan:4222/team-a ./backup --channel review",
  run: (transfer, store, dir, only) => transfer.exportNamespace(store, dir, only),
};

const IMPORT: TransferCommand = {
  name: "import",
  description: "read a SPEC folder into a NATS namespace, keeping sequence numbers",
  args: [
    ["<dir>", "the SPEC folder (a root holding channel folders)"],
    ["<target>", "nats://host:port/namespace"],
  ],
  help:
    "\nChannels that already exist in the namespace are refused (CHANNEL_EXISTS).\n" +
    "\nExamples:\n  agent-chat import ~/agent-chat nats://127.0.0.1:4222/team-a\n" +
    "  agent-chat import ./team-a nats://nats.lan:4222/team-a --channel review,deploy",
  run: (transfer, store, dir, only) => transfer.importFolder(dir, store, only),
};

function registerTransfer(program: Command, ctx: CliContext, spec: TransferCommand): void {
  const [first, second] = spec.args;
  program
    .command(spec.name)
    .description(spec.description)
    .argument(...first)
    .argument(...second)
    .option("--channel <list>", "only these channels (comma-separated)")
    .addHelpText("after", spec.help)
    .action((a: string, b: string, opts: { channel?: string }) => {
      const exporting = spec.name === "export";
      const [url, dir] = exporting ? [a, b] : [b, a];
      return onNamespace(ctx, url, async (store) => {
        const transfer = await import("../../store/transfer.js");
        const summary = await spec.run(transfer, store, dir, onlyChannels(opts));
        const [from, to] = exporting ? [store.location, dir] : [dir, store.location];
        report(ctx, `${spec.name}ed`, from, to, summary);
      });
    });
}

function registerBridge(program: Command, ctx: CliContext): void {
  program
    .command("bridge")
    .description("turn b00t envelopes published on chat.<channel> into messages of a namespace")
    .argument("[target]", "nats://host:port/namespace (default: --root / $AGENT_CHAT_ROOT)")
    .option("--no-create", "reject envelopes for channels that do not exist yet")
    .addHelpText(
      "after",
      "\nRuns until interrupted. Several bridges of one namespace share the work: each envelope\n" +
        "becomes exactly one message. Prints one line per message (NDJSON with --json).\n" +
        "\nExamples:\n  agent-chat bridge nats://127.0.0.1:4222/team-a\n" +
        "  AGENT_CHAT_ROOT=nats://nats.lan:4222/team-a agent-chat --json bridge",
    )
    .action((target: string | undefined, opts: { create: boolean }) =>
      onNamespace(ctx, target ?? ctx.root, async (store) => {
        const { ingestEnvelopes } = await import("../../store/nats/index.js");
        if (!ctx.json) ctx.err(`bridging chat.> into ${store.location} (Ctrl-C to stop)\n`);
        await ingestEnvelopes(store, {
          signal: ctx.abort.signal,
          createChannels: opts.create,
          onPosted: (r) => {
            if (ctx.json) ctx.printJson({ channel: r.channel, seq: r.seq, file: r.file });
            else ctx.out(`${r.channel}\t#${r.seq}\t${r.file}\n`);
          },
          onRejected: (subject, err) => ctx.warn(`envelope on ${subject} rejected: ${err.message}`),
        });
      }),
    );
}

/** Opens the namespace at `url` for one command's `use`, and closes it however that ends. */
async function onNamespace(
  ctx: CliContext,
  url: string,
  use: (store: NatsStore) => Promise<void>,
): Promise<void> {
  const store = await openNats(ctx, url);
  try {
    await use(store);
  } finally {
    await store.close();
  }
}

/** `--channel a,b` as the list a transfer is limited to; absent: every channel. */
function onlyChannels(opts: { channel?: string }): string[] | undefined {
  return opts.channel === undefined ? undefined : splitList(opts.channel);
}

async function openNats(ctx: CliContext, url: string) {
  if (!isNatsUrl(url))
    throw new UsageError(`expected a nats://host:port/namespace URL, got ${url}`);
  const { NatsStore } = await import("../../store/nats/index.js");
  const options = ctx.natsOptions();
  const max = ctx.maxBodyBytes;
  return NatsStore.open(url, max === undefined ? options : { ...options, maxBodyBytes: max });
}

function report(ctx: CliContext, verb: string, from: string, to: string, s: TransferSummary) {
  for (const w of s.warnings) ctx.warn(w);
  if (ctx.json) return ctx.printJson({ from, to, ...s });
  ctx.out(
    `${verb} ${s.channels} channel(s), ${s.messages} message(s), ${s.cursors} cursor(s), ` +
      `${s.tasks} task(s) from ${from} to ${to}\n`,
  );
}
