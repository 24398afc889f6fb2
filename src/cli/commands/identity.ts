import { readFileSync } from "node:fs";
import type { Command } from "commander";
import {
  approveKey,
  createIdentity,
  type ExportedIdentity,
  exportIdentity,
  type IdentityInfo,
  type IdentityPlace,
  importIdentity,
  listIdentities,
  replaceIdentity,
  rotateIdentity,
  showIdentity,
} from "../../client/identity.js";
import { AgentChatError } from "../../core/errors.js";
import { META_MAINTAINER } from "../../core/governance.js";
import type { CliContext } from "../context.js";

/** `agent-chat id …`: an agent's signing key (docs/signatures.md). */
export function registerIdentityCommands(program: Command, ctx: CliContext): void {
  const id = program
    .command("id")
    .description("signing keys: who really wrote a message (docs/signatures.md)")
    .addHelpText(
      "after",
      "\nPrivate keys stay in $XDG_CONFIG_HOME/agent-chat/keys (~/.config/…), mode 0600; the public" +
        "\nkey is published in the root (.keys/) and pinned on first use by every reader.\n" +
        "\nExamples:\n  agent-chat id new --as alice\n  agent-chat id show alice\n" +
        "  agent-chat id export --as alice > alice.json   # then on the other machine:\n" +
        "  agent-chat id import --file alice.json\n  agent-chat id rotate --as alice",
    );

  id.command("new")
    .description("make a key pair for an agent; posts by it are signed from now on")
    .option("--as <name>", "the agent (default $AGENT_CHAT_NAME)")
    .option("--replace", "the old key is lost: publish a new one for a maintainer to approve")
    .action(async (opts: { as?: string; replace?: boolean }) => {
      const name = ctx.agent(opts.as);
      if (!opts.replace) {
        print(ctx, await createIdentity(await place(ctx), name), "made a key for");
        return;
      }
      const info = await replaceIdentity(await place(ctx), name);
      print(ctx, info, "made a new key for");
      if (!ctx.json) {
        ctx.err(
          `readers who pinned the old key refuse it until a maintainer approves it:\n` +
            `  agent-chat id approve CHANNEL ${info.name} ${info.key} --as MAINTAINER\n`,
        );
      }
    });

  id.command("approve")
    .argument("<channel>", "a channel whose maintainer you are")
    .argument("<name>", "whose key")
    .argument("<key>", "the new key (agent-chat id show NAME)")
    .description("as a channel's maintainer, approve a new key for a name (its old key lost)")
    .option("--as <name>", "the maintainer (default $AGENT_CHAT_NAME)")
    .action(async (channel: string, name: string, key: string, opts: { as?: string }) => {
      const as = ctx.agent(opts.as);
      const meta = await (await ctx.open()).roster(channel);
      const raw = meta[META_MAINTAINER];
      const maintainer = typeof raw === "string" ? raw : undefined;
      const request = { channel, name, key, as, maintainer };
      print(ctx, await approveKey(await place(ctx), request), "approved the key of");
    });

  id.command("list")
    .description("the agents this user holds keys for")
    .action(async () => {
      const list = await listIdentities(await place(ctx));
      if (ctx.json) return ctx.printJson({ identities: list });
      if (list.length === 0) ctx.err("no keys here (make one with: agent-chat id new --as NAME)\n");
      for (const info of list) ctx.out(`${info.name}\t${info.key ?? "(not published)"}\n`);
    });

  id.command("show")
    .argument("<name>")
    .description("an agent's key: published in the root, pinned here, held here")
    .action(async (name: string) => print(ctx, await showIdentity(await place(ctx), name)));

  id.command("rotate")
    .description("replace an agent's key with a new one that the old key vouches for")
    .option("--as <name>", "the agent (default $AGENT_CHAT_NAME)")
    .action(async (opts: { as?: string }) => {
      print(ctx, await rotateIdentity(await place(ctx), ctx.agent(opts.as)), "rotated the key of");
    });

  id.command("export")
    .description("print an agent's key pair as JSON, for id import on its second machine")
    .option("--as <name>", "the agent (default $AGENT_CHAT_NAME)")
    .action(async (opts: { as?: string }) => {
      ctx.printJson(await exportIdentity(await place(ctx), ctx.agent(opts.as)));
    });

  id.command("import")
    .description("install a key pair printed by id export (from --file or stdin)")
    .option("--file <path>", "the exported JSON (default: stdin)")
    .action(async (opts: { file?: string }) => {
      const text = readFileSync(opts.file ?? 0, "utf8");
      print(ctx, await importIdentity(await place(ctx), parseExport(text)), "imported the key of");
    });
}

/** Where `id` commands (and the viewer's first-use key) keep and publish keys for this root. */
export async function place(ctx: CliContext): Promise<IdentityPlace> {
  const root = ctx.rootSpec;
  if (root.kind === "folder") {
    return { configDir: ctx.configDir, root: root.given, rootId: root.path };
  }
  // A NATS root publishes keys in its namespace's KV. Pins are kept under the store's location,
  // as openStore keeps them (the URL without credentials, its port filled in).
  const store = await ctx.open();
  const nats: IdentityPlace = { configDir: ctx.configDir, root: undefined, rootId: store.location };
  if (store.publishedKeys) nats.directory = store.publishedKeys;
  return nats;
}

function parseExport(text: string): ExportedIdentity {
  try {
    const data = JSON.parse(text) as Partial<ExportedIdentity>;
    if (typeof data.name === "string" && typeof data.private_key === "string") {
      return { name: data.name, key: String(data.key ?? ""), private_key: data.private_key };
    }
  } catch {
    // said below
  }
  throw new AgentChatError("INVALID_ARGUMENT", "not the JSON that agent-chat id export prints");
}

function print(ctx: CliContext, info: IdentityInfo, done?: string): void {
  if (ctx.json) {
    ctx.printJson(info);
    return;
  }
  if (done) ctx.out(`${done} ${info.name}\n`);
  ctx.out(`name\t${info.name}\nkey\t${info.key ?? "(none)"}\n`);
  ctx.out(`private\t${info.privateKey ?? "(not held here)"}\n`);
  ctx.out(`published\t${info.published.join(" → ") || "(none)"}\n`);
  ctx.out(`pinned\t${info.pinned.join(" → ") || "(none)"}\n`);
}
