import type { Command } from "commander";
import type { Store } from "../../store/types.js";
import type { CliContext } from "../context.js";

/** `agent-chat view`: the web viewer of the root, until Ctrl-C. */
export function registerViewerCommands(program: Command, ctx: CliContext): void {
  program
    .command("view")
    .description("serve the web viewer of the root (channels, live messages, posting) until Ctrl-C")
    .option(
      "--http <[host:]port>",
      "where to listen (default 127.0.0.1:7391; port 0 picks a free one)",
    )
    .option("--http-allow-remote", "allow a non-loopback address (the token is still required)")
    .option(
      "--as <name>",
      "post and decide as this person only, signed with their key (made on first use)",
    )
    .addHelpText(
      "after",
      "\nPrints the page's address, whose path holds a random access token (http://HOST:PORT/s/<token>/);\n" +
        "requests without it are refused. The viewer sets no cookie that other ports could receive.\n" +
        "\nExamples:\n  agent-chat view\n  agent-chat view --http 8080\n" +
        "  agent-chat --root ./chat view --http 127.0.0.1:0\n" +
        "  agent-chat view --http 0.0.0.0:7391 --http-allow-remote\n  agent-chat view --as alice",
    )
    .action(async (opts: { http?: string; httpAllowRemote?: boolean; as?: string }) => {
      // Loaded here so that the other commands never pay for the viewer.
      const { parseListenAddress } = await import("../../viewer/address.js");
      const { startViewer } = await import("../../viewer/server.js");
      const { viewerPanels } = await import("../plugins/viewer-panels.js");
      const address = parseListenAddress(opts.http ?? "");
      // A person posting from the page is present in the viewer.
      if (!ctx.env.AGENT_CHAT_HARNESS) ctx.harness = "viewer";
      const store = await ctx.open();
      const as = opts.as === undefined ? undefined : await viewerIdentity(ctx, opts.as);
      const viewer = await startViewer({
        ...(as ? { as } : {}),
        store,
        host: address.host,
        port: address.port,
        allowRemote: opts.httpAllowRemote === true,
        panels: viewerPanels,
      });
      if (ctx.json) ctx.printJson({ url: viewer.url, token: viewer.token, root: store.location });
      else {
        ctx.out(`agent-chat viewer of ${store.location}\n  open ${viewer.url}\n`);
        ctx.err("(Ctrl-C to stop)\n");
      }
      await new Promise<void>((resolve) => {
        if (ctx.abort.signal.aborted) resolve();
        ctx.abort.signal.addEventListener("abort", () => resolve(), { once: true });
      });
      await viewer.close();
    });
}

/**
 * The person opening the viewer, with their own key: made on first use (published and pinned as
 * `id new` does), then every post and decision from the page is signed with it.
 */
async function viewerIdentity(
  ctx: CliContext,
  name: string,
): Promise<{ name: string; store: Store }> {
  const { hasPrivateKey } = await import("../../features/trust/index.js");
  if (!hasPrivateKey(ctx.configDir, name)) {
    const { createIdentity } = await import("../../features/trust/index.js");
    const { place } = await import("../../features/trust/cli.js");
    await createIdentity(await place(ctx), name);
    ctx.err(`made a key for ${name} (agent-chat id show ${name}); the viewer signs as ${name}\n`);
  }
  return { name, store: await ctx.openFor(name) };
}
