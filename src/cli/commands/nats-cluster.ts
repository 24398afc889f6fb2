import type { Command } from "commander";
import { isNatsUrl } from "../../store/roots.js";
import { type CliContext, parsePositiveInt, UsageError } from "../context.js";

/** `agent-chat nats …`: managing a namespace on a NATS cluster. */
export function registerNatsClusterCommands(program: Command, ctx: CliContext): void {
  const nats = program.command("nats").description("manage a NATS namespace (replicas)");
  nats
    .command("replicas")
    .description("keep a namespace's messages and state on N servers of the cluster")
    .argument(
      "<namespace>",
      "a namespace of the --root / $AGENT_CHAT_ROOT servers, or a nats:// URL",
    )
    .argument("<n>", "copies to keep: 1 to 5, at most the cluster's JetStream servers")
    .addHelpText(
      "after",
      "\nJetStream copies the existing messages to the new servers; the command returns once the\n" +
        "copies are current. A namespace created on one server keeps 1 copy until raised.\n" +
        "\nExamples:\n  AGENT_CHAT_ROOT=nats://h1:4222,h2:4222,h3:4222/team-a agent-chat nats replicas team-a 3\n" +
        "  agent-chat nats replicas nats://h1:4222,h2:4222/team-a 2",
    )
    .action(async (namespace: string, n: string) => {
      const replicas = parsePositiveInt(n, "replicas");
      const url = isNatsUrl(namespace) ? namespace : withNamespace(ctx.root, namespace);
      const { NatsStore } = await import("../../store/nats/index.js");
      // The open's own warning would tell to run this very command.
      const store = await NatsStore.open(url, { ...ctx.natsOptions(), onWarning: () => {} });
      try {
        await store.setReplicas(replicas);
        if (ctx.json) ctx.printJson({ namespace: store.namespace, replicas });
        else ctx.out(`namespace ${store.namespace} keeps ${replicas} copies (${store.location})\n`);
      } finally {
        await store.close();
      }
    });
}

/** The root's servers with another namespace: `nats://h1,h2/team-a` + `team-b`. */
function withNamespace(root: string, namespace: string): string {
  if (!isNatsUrl(root)) {
    throw new UsageError(
      `${namespace} is a namespace name, but the root ${root} is no nats:// URL: give the full URL (nats://host:4222/${namespace}) or set --root`,
    );
  }
  return `${/^[a-z]+:\/\/[^/?#]*/i.exec(root)![0]}/${namespace}`;
}
