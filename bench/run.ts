// `npm run bench [-- --quick] [--only=NAME] [--clean-env] [--node=PATH,…] [--chat-py=PATH]`: runs every bench
// module, prints one table (median, p99, the baseline measured in the same run and the ratio),
// states the machine, and writes bench/results/latest.json.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import agentWakeBench from "./agent-wake.js";
import clusterBench from "./cluster.js";
import daemonBench from "./daemon.js";
import deliveryBench from "./delivery.js";
import fanoutBench from "./fanout.js";
import { fsBench } from "./fs.js";
import leasesBench from "./leases.js";
import { type BenchContext, type BenchModule, type Row, ratio } from "./lib.js";
import mcpBench from "./mcp.js";
import natsBench from "./nats.js";
import scaleBench from "./scale.js";
import searchBench from "./search.js";
import { chatPyFrom, SLOWING_ENV, startupBench } from "./startup.js";
import wakeBench from "./wake.js";

if (process.argv.includes("--help")) {
  console.log(`npm run bench -- [options]
  --quick          a short pass with fewer samples
  --only=NAME      the modules whose name contains NAME (start-up, channel size, folder store, daemon, nats, cluster, leases,
                   mcp, wake, fan-out, agent wake, delivery, search)
  --clean-env      also remove ${SLOWING_ENV.join(", ")} for the other modules' processes
                   (the start-up figures are always measured without them)
  --cli=PATH       another build's dist/cli.cjs (e.g. to compare before and after a change)
  --node=PATH,...  the Node executables the start-up figures are measured with, each against
                   its own \`node -e 0\` (default: the one running the bench)
  --chat-py=PATH   the reference chat.py for the start-up baselines: a chat.py file, or the
                   console command PyPI's agent-chat-plugin installs (default: $AGENT_CHAT_REFERENCE,
                   else $AGENT_CHAT_REFERENCE_0_7, else bench/reference/chat_standin.py)`);
  process.exit(0);
}

const modules: BenchModule[] = [
  // This machine's environment as it is, before --clean-env below, for the context rows.
  startupBench({
    chatPy: chatPyFrom(process.argv, process.env),
    env: { ...process.env },
    nodes: process.argv
      .find((a) => a.startsWith("--node="))
      ?.slice(7)
      .split(",")
      .map((p) => resolve(p)),
  }),
  scaleBench,
  fsBench,
  daemonBench,
  natsBench,
  leasesBench,
  clusterBench,
  mcpBench,
  wakeBench,
  fanoutBench,
  agentWakeBench,
  deliveryBench,
  searchBench,
];

const quick = process.argv.includes("--quick");
const only = process.argv.find((a) => a.startsWith("--only="))?.slice(7);
const temps: string[] = [];
const ctx: BenchContext = {
  quick,
  cli: resolve(
    process.argv.find((a) => a.startsWith("--cli="))?.slice(6) ??
      new URL("../dist/cli.cjs", import.meta.url).pathname,
  ),
  tmp: () => {
    const dir = mkdtempSync(join(tmpdir(), "agent-chat-bench-"));
    temps.push(dir);
    return dir;
  },
};

/** The file system type of a folder, as mounted (`stat -f` cannot tell ext4 from ext2). */
function fileSystem(dir: string): string {
  try {
    const lines = execFileSync("df", ["-PT", dir], { encoding: "utf8" }).trim().split("\n");
    return lines[1]?.split(/\s+/)[1] ?? "unknown";
  } catch {
    return "unknown";
  }
}

/**
 * Environment variables known to slow Node's start-up (NODE_EXTRA_CA_CERTS can triple it): the
 * start-up module never passes them on and shows this machine's figures with them only as
 * context; `--clean-env` removes them for every other module's processes too.
 */
const cleanEnv = process.argv.includes("--clean-env");
const startupEnv = SLOWING_ENV.filter((k) => process.env[k]);
if (cleanEnv) for (const k of startupEnv) delete process.env[k];

const machine = {
  cores: cpus().length,
  cpu: cpus()[0]?.model ?? "unknown",
  memoryGiB: Math.round(totalmem() / 2 ** 30),
  node: process.version,
  platform: `${process.platform} ${process.arch}`,
  fileSystem: fileSystem(tmpdir()),
  tmpdir: tmpdir(),
  startupEnv,
  startupEnvRemoved: cleanEnv,
  quick,
  date: new Date().toISOString(),
};

const fmt = (n: number | undefined, digits = 2) =>
  n === undefined || Number.isNaN(n) ? "—" : n >= 100 ? n.toFixed(0) : n.toFixed(digits);

console.log(
  `agent-chat bench — ${machine.cores} cores (${machine.cpu}), ${machine.memoryGiB} GiB, Node ${machine.node}, ` +
    `${machine.fileSystem} at ${machine.tmpdir}${quick ? ", quick pass" : ""}`,
);
if (startupEnv.length > 0)
  console.log(
    `note: set in the environment, slowing start-up: ${startupEnv.join(", ")} (removed for the ` +
      `start-up figures${cleanEnv ? " and every other process" : ""})`,
  );

const rows: Row[] = [];
for (const module of modules) {
  if (only && !module.name.includes(only)) continue;
  process.stderr.write(`running ${module.name}…\n`);
  try {
    rows.push(...(await module.run(ctx)));
  } catch (err) {
    console.error(`${module.name} failed: ${(err as Error).stack ?? err}`);
    process.exitCode = 1;
  }
}
for (const dir of temps) rmSync(dir, { recursive: true, force: true });

const header = [
  "group",
  "figure",
  "unit",
  "n",
  "median",
  "p99",
  "baseline",
  "base median",
  "base p99",
  "ratio",
  "goal",
  "met",
];
const table = rows.map((r) => [
  r.group,
  r.figure,
  r.unit,
  String(r.stats.n),
  fmt(r.stats.median),
  fmt(r.stats.p99),
  r.baseline?.name ?? "—",
  fmt(r.baseline?.stats.median),
  fmt(r.baseline?.stats.p99),
  fmt(ratio(r)),
  r.goal ?? "—",
  r.met === undefined ? "—" : r.met ? "yes" : "NO",
]);
console.log(`\n| ${header.join(" | ")} |\n|${header.map(() => "---").join("|")}|`);
for (const line of table) console.log(`| ${line.join(" | ")} |`);
for (const r of rows.filter((x) => x.note)) console.log(`note (${r.figure}): ${r.note}`);

mkdirSync(new URL("./results/", import.meta.url), { recursive: true });
writeFileSync(
  new URL("./results/latest.json", import.meta.url),
  `${JSON.stringify({ machine, rows: rows.map((r) => ({ ...r, ratio: ratio(r) })) }, null, 2)}\n`,
);
console.log("\nwritten: bench/results/latest.json");
