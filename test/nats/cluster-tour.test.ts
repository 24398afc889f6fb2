import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { NatsStore } from "../../src/store/nats/nats-store.js";
import { type CliResult, collect, runCli, startCli } from "../helpers/cli.js";
import { describeCluster } from "../helpers/describe-cluster.js";
import { NatsCluster } from "../helpers/nats-cluster.js";
import { tempDir } from "../helpers/tmp.js";

interface Step {
  args: string[];
  /** The exit the README gives (`# exit 3`), else 0. */
  exit: number;
}

/** Splits a command line as the shell would, for the quoting the README uses ('…'). */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

/** The `agent-chat …` commands of the README's "60-second tour", with the exits it shows. */
function tour(): Step[] {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const section = readme.slice(readme.indexOf("## The 60-second tour"));
  const block = /```console\n([\s\S]*?)```/.exec(section)![1]!;
  const steps: Step[] = [];
  for (const line of block.split("\n")) {
    const command = /^\$ agent-chat (.*)$/.exec(line);
    if (command) {
      // The shell's own part (`&& git push`) and comments are not agent-chat's.
      const text = command[1]!.replace(/\s+&&.*$/, "").replace(/\s+#\s.*$/, "");
      steps.push({ args: words(text), exit: 0 });
    } else if (steps.length > 0 && line !== "" && !line.startsWith("$") && !line.startsWith("(")) {
      const exit = /#\s*exit (\d+)/.exec(line);
      if (exit) steps.at(-1)!.exit = Number(exit[1]);
    }
  }
  return steps;
}

/**
 * Runs the tour's steps on a root; each result with the root's name taken out of it, and a
 * lease's time left read to the minute (a cluster with a node down may take a second more).
 */
async function runTour(steps: Step[], root: string) {
  const results: Array<{ args: string[]; code: number | null; out: string }> = [];
  const normal = (r: CliResult) =>
    `${r.stdout}${r.stderr}`
      .replaceAll(root, "<root>")
      .replace(/\b29m 5\ds left\b/g, "30m left")
      .split("\n")
      .filter((l) => !l.startsWith("ts: "))
      .join("\n");
  let waiting: ReturnType<typeof startCli> | undefined;
  for (const step of steps) {
    if (step.args[0] === "wait") {
      // Parks until the next post, as in the tour: started now, collected after that post.
      waiting = startCli(step.args, { root });
      continue;
    }
    const r = await runCli(step.args, { root });
    results.push({ args: step.args, code: r.code, out: normal(r) });
    if (waiting && step.args[0] === "post") {
      const woke = await collect(waiting);
      results.push({ args: ["wait"], code: woke.code, out: normal(woke) });
      waiting = undefined;
    }
  }
  return results;
}

let cluster: NatsCluster;

describeCluster("the README's tour on a 3-node cluster", () => {
  beforeAll(async () => {
    cluster = await NatsCluster.start();
  }, 60_000);
  afterAll(async () => {
    await cluster?.dispose();
  });

  it("every command of the tour works through the other two nodes while the namespace's stream leader is stopped", async () => {
    const namespace = `tour${process.pid}`;
    const root = cluster.url(namespace);
    // The namespace is made while all three run (3 copies), then its leader stops.
    await (await NatsStore.open(root)).close();
    const leader = await cluster.streamLeader(`AGENTCHAT_${namespace}`);
    await leader.stop();
    await cluster.waitReady();

    const steps = tour();
    expect(steps.map((s) => s.args[0])).toEqual([
      "init",
      "post",
      "read",
      "wait",
      "post",
      "task",
      "claim",
      "claim",
      "fence",
      "done",
      "tasks",
    ]);
    // The same tour on a folder root is the reference: same exits, same output.
    const folder = tempDir("agent-chat-tour-");
    try {
      const onFolder = await runTour(steps, folder.dir);
      const onCluster = await runTour(steps, root);
      expect(onCluster).toEqual(onFolder);
      expect(onCluster.map((r) => r.code)).toEqual(steps.map((s) => s.exit));
    } finally {
      folder.cleanup();
    }
    await leader.start();
  }, 120_000);
});
