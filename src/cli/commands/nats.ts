import type { Command } from "commander";
import type { NatsStore } from "../../store/nats/index.js";
import { isNatsUrl } from "../../store/roots.js";
import type { TransferSummary } from "../../store/transfer.js";
import { type CliContext, splitList, UsageError } from "../context.js";

/** export / import between a NATS namespace and the SPEC folder, and the b00t envelope bridge. */
export function registerNatsCommands(program: Command, ctx: CliContext): void {
  registerExport(program, ctx);
  registerImport(program, ctx);
  registerBridge(program, ctx);
}

function registerExport(program: Command, ctx: CliContext): void {
  program
    .command("export")
    .description("write a NATS namespace out as the SPEC folder (for chat.py, git, backups)")
    .argument("<source>", "nats://host:port/namespace")
    .argument("<dir>", "folder to write; channels already in it are never overwritten")
    .option("--channel <list>", "only these channels (comma-separated)")
    .addHelpText(
      "after",
      "\nCredentials come from AGENT_CHAT_NATS_USER/PASS, _TOKEN, _CREDS, _CA/_CERT/_KEY or\n" +
        "AGENT_CHAT_NATS_CONFIG (see docs/nats.md), never from the command line.\n" +
        "\nExamples:\n  agent-chat export nats://127.0.0.1:4222/team-a ./team-a\n" +
        "  agent-chat --json export nats://nats.lan:4222/team-a ./backup --channel review",
    )
    .action((source: string, dir: string, opts: { channel?: string }) =>
      onNamespace(ctx, source, async (store) => {
        const { exportNamespace } = await import("../../store/transfer.js");
        const summary = await exportNamespace(store, dir, onlyChannels(opts));
        report(ctx, "exported", store.location, dir, summary);
      }),
    );
}

function registerImport(program: Command, ctx: CliContext): void {
  program
    .command("import")
    .description("read a SPEC folder into a NATS namespace, keeping sequence numbers")
    .argument("<dir>", "the SPEC folder (a root holding channel folders)")
    .argument("<target>", "nats://host:port/namespace")
    .option("--channel <list>", "only these channels (comma-separated)")
    .addHelpText(
      "after",
      "\nChannels that already exist in the namespace are refused (CHANNEL_EXISTS).\n" +
        "\nExamples:\n  agent-chat import ~/agent-chat nats://127.0.0.1:4222/team-a\n" +
        "  agent-chat import ./team-a nats://nats.lan:4222/team-a --channel review,deploy",
    )
    .action((dir: string, target: string, opts: { channel?: string }) =>
      onNamespace(ctx, target, async (store) => {
        const { importFolder } = await import("../../store/transfer.js");
        const summary = await importFolder(dir, store, onlyChannels(opts));
        report(ctx, "imported", dir, store.location, summary);
      }),
    );
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
