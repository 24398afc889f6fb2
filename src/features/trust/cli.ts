import { readFileSync } from "node:fs";
import type { Command } from "commander";
import type { CliContext } from "../../cli/context.js";
import { folderRootIds } from "../../client/open.js";
import { AgentChatError } from "../../core/errors.js";
import { META_MAINTAINER } from "../governance/index.js";
import {
  addAuthority,
  approveKey,
  createIdentity,
  type ExportedIdentity,
  exportIdentity,
  type IdentityInfo,
  type IdentityPlace,
  importIdentity,
  listAuthorities,
  listIdentities,
  removeAuthority,
  replaceIdentity,
  rotateIdentity,
  showIdentity,
  trustKey,
} from "./identity.js";

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
        "  agent-chat id import --file alice.json\n  agent-chat id rotate --as alice\n" +
        "  agent-chat id trust alice KEY           # after comparing its fingerprint out of band\n" +
        "  agent-chat id authority add maya        # accept key approvals signed by maya\n" +
        "\nTrust lives here, not in the root: a key becomes a name's on first sight, by a rotation\n" +
        "the pinned key signed, by an approval of an authority you chose, or by id trust.",
    );
  registerIdNew(id, ctx);
  registerIdApprove(id, ctx);
  registerIdTrust(id, ctx);
  registerIdAuthority(id, ctx);
  registerIdList(id, ctx);
  registerIdShow(id, ctx);
  registerIdRotate(id, ctx);
  registerIdExport(id, ctx);
  registerIdImport(id, ctx);
}

/**
 * A key as a command line argument, after "--" when it begins with a dash. A key is base64url, so
 * one in 64 begins with "-", which the option parser would refuse as an unknown option: the
 * commands that take a key allow unknown options, so such a key is taken as the key argument
 * where it stands (a word that is no key is then refused as one). Only a key beginning with
 * "-h" (help) needs the "--".
 */
function keyArgument(key = "KEY"): string {
  return key.startsWith("-") ? `-- ${key}` : key;
}

function registerIdNew(id: Command, ctx: CliContext): void {
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
          `readers who pinned the old key refuse it until an authority they chose approves it:\n` +
            `  agent-chat id approve --as MAINTAINER CHANNEL ${info.name} ${keyArgument(info.key)}\n` +
            `or they pin it themselves after comparing the fingerprint (${info.fingerprint}):\n` +
            `  agent-chat id trust ${info.name} ${keyArgument(info.key)}\n`,
        );
      }
    });
}

function registerIdApprove(id: Command, ctx: CliContext): void {
  id.command("approve")
    .argument("<channel>", "a channel whose maintainer you are")
    .argument("<name>", "whose key")
    .argument("<key>", "the new key (agent-chat id show NAME)")
    .allowUnknownOption() // a key may begin with "-" (keyArgument)
    .description(
      "as a channel's maintainer, approve a new key for a name (its old key lost); it counts for readers who chose you as an authority (id authority add)",
    )
    .option("--as <name>", "the maintainer (default $AGENT_CHAT_NAME)")
    .action(async (channel: string, name: string, key: string, opts: { as?: string }) => {
      const as = ctx.agent(opts.as);
      const meta = await (await ctx.open()).roster(channel);
      const raw = meta[META_MAINTAINER];
      const maintainer = typeof raw === "string" ? raw : undefined;
      const request = { channel, name, key, as, maintainer };
      print(ctx, await approveKey(await place(ctx), request), "approved the key of");
    });
}

function registerIdTrust(id: Command, ctx: CliContext): void {
  id.command("trust")
    .argument("<name>", "whose key")
    .argument("<key>", "the key, as agent-chat id show prints it on the owner's machine")
    .allowUnknownOption() // a key may begin with "-" (keyArgument)
    .description("pin a key as a name's yourself, after comparing its fingerprint out of band")
    .option("--only", "forget the keys pinned before for the name (a first pin that was wrong)")
    .addHelpText(
      "after",
      "\nThe one way, besides a rotation signed by the pinned key or an approval by an authority\n" +
        "you chose, to accept a new key for a name: compare the fingerprint first.\n" +
        "\nExamples:\n  agent-chat id trust alice 3q2-…   # then: agent-chat id show alice",
    )
    .action(async (name: string, key: string, opts: { only?: boolean }) => {
      print(
        ctx,
        await trustKey(await place(ctx), name, key, opts.only === true),
        "pinned the key of",
      );
    });
}

function registerIdAuthority(id: Command, ctx: CliContext): void {
  const authority = id
    .command("authority")
    .description("names whose key approvals you accept in this root (a team or maintainer key)");
  registerIdAuthorityAdd(authority, ctx);
  registerIdAuthorityRemove(authority, ctx);
  registerIdAuthorityList(authority, ctx);
}

function registerIdAuthorityAdd(authority: Command, ctx: CliContext): void {
  authority
    .command("add")
    .argument("<name>", "the authority")
    .argument("[key]", "its key (default: the one pinned here for it; compare the fingerprint)")
    .allowUnknownOption() // a key may begin with "-" (keyArgument)
    .description("accept key approvals (agent-chat id approve) signed by this name's key")
    .action(async (name: string, key: string | undefined) => {
      print(ctx, await addAuthority(await place(ctx), name, key), "chose as an authority");
    });
}

function registerIdAuthorityRemove(authority: Command, ctx: CliContext): void {
  authority
    .command("remove")
    .argument("<name>", "the authority")
    .description("approvals signed by this name no longer count here")
    .action(async (name: string) => {
      const removed = await removeAuthority(await place(ctx), name);
      if (ctx.json) return ctx.printJson({ name, removed });
      ctx.out(removed ? `${name} is no longer an authority here\n` : `${name} was no authority\n`);
    });
}

function registerIdAuthorityList(authority: Command, ctx: CliContext): void {
  authority
    .command("list")
    .description("the authorities chosen for this root")
    .action(async () => {
      const all = listAuthorities(await place(ctx));
      if (ctx.json) return ctx.printJson({ authorities: all });
      if (Object.keys(all).length === 0) ctx.err("no authorities chosen for this root\n");
      for (const [name, keys] of Object.entries(all)) ctx.out(`${name}\t${keys.join(" ")}\n`);
    });
}

function registerIdList(id: Command, ctx: CliContext): void {
  id.command("list")
    .description("the agents this user holds keys for")
    .action(async () => {
      const list = await listIdentities(await place(ctx));
      if (ctx.json) return ctx.printJson({ identities: list });
      if (list.length === 0) ctx.err("no keys here (make one with: agent-chat id new --as NAME)\n");
      for (const info of list) ctx.out(`${info.name}\t${info.key ?? "(not published)"}\n`);
    });
}

function registerIdShow(id: Command, ctx: CliContext): void {
  id.command("show")
    .argument("<name>")
    .description("an agent's key: published in the root, pinned here, held here")
    .action(async (name: string) => print(ctx, await showIdentity(await place(ctx), name)));
}

function registerIdRotate(id: Command, ctx: CliContext): void {
  id.command("rotate")
    .description("replace an agent's key with a new one that the old key vouches for")
    .option("--as <name>", "the agent (default $AGENT_CHAT_NAME)")
    .action(async (opts: { as?: string }) => {
      print(ctx, await rotateIdentity(await place(ctx), ctx.agent(opts.as)), "rotated the key of");
    });
}

function registerIdExport(id: Command, ctx: CliContext): void {
  id.command("export")
    .description("print an agent's key pair as JSON, for id import on its second machine")
    .option("--as <name>", "the agent (default $AGENT_CHAT_NAME)")
    .action(async (opts: { as?: string }) => {
      ctx.printJson(await exportIdentity(await place(ctx), ctx.agent(opts.as)));
    });
}

function registerIdImport(id: Command, ctx: CliContext): void {
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
    return { configDir: ctx.configDir, root: root.given, ...folderRootIds(root.path) };
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
  ctx.out(`fingerprint\t${info.fingerprint ?? "(none)"}\n`);
  if (info.authority.length > 0) ctx.out(`authority\t${info.authority.join(" ")}\n`);
}
