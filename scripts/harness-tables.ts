// `npm run docs:harnesses [-- --check]`: writes the per-harness tables of docs/first-run.md and
// docs/delivery.md from what the code and the tests hold, so no row is written by hand: each
// host's profile (its first run's questions, which test/agents/first-run.test.ts answers in the
// real binary), the files `setup TOOL --write --wake` writes and the wake path `doctor` reads back,
// the test files that drive it, and the agent-wake bench's last figures
// (bench/results/agent-wake.json). With --check it changes nothing and exits 1 when a table is
// out of date (test/harness-tables.test.ts runs the same check).
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { readWakeRecords, type WakeRecord } from "../bench/agent-wake-record.js";
import type { Host } from "../src/hosts/host.js";
import { HOSTS } from "../src/hosts/index.js";
import { applySetup, inspectSetup, planSetup } from "../src/hosts/setup.js";

const REPO = new URL("../", import.meta.url);
const AGENT_TESTS = new URL("test/agents/", REPO);
/** Tests that drive several harnesses: a host is in them when they run `setup` for it. */
const SHARED_TESTS = ["first-run.test.ts", "mixed-team.test.ts"];

export const FIRST_RUN_DOC = "docs/first-run.md";
export const DELIVERY_DOC = "docs/delivery.md";

const row = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
const table = (header: readonly string[], rows: readonly string[][]) =>
  [row(header), row(header.map(() => "---")), ...rows.map(row)].join("\n");

/** The version of the host's npm package that our dev dependencies pin. */
function pinned(host: Host): string {
  const pkg = JSON.parse(readFileSync(new URL("package.json", REPO), "utf8"));
  const version = pkg.devDependencies?.[host.profile.npm];
  if (typeof version !== "string") throw new Error(`${host.profile.npm} is not a dev dependency`);
  return version;
}

function hookPoints(host: Host): string {
  if (host.profile.hooksRunBy) return host.profile.hooksRunBy;
  const e = host.hooks.events;
  return `${e["session-start"]} · ${e.prompt} · ${e.stop}`;
}

/**
 * What `setup TOOL --write --wake` writes in an empty home (the project's files by their path in
 * it, the user's from `~`), and the wake path `doctor` then reads back.
 */
async function afterSetup(host: Host): Promise<{ files: string; wake: string }> {
  const home = mkdtempSync(join(tmpdir(), "agent-chat-tables-"));
  try {
    const homes = Object.assign({}, ...HOSTS.map((h) => h.locate({}, home)));
    const at = { projectDir: join(home, "project"), homes };
    const o = { ...at, tool: host.tool, agent: "alice", root: join(home, "chat") };
    const written = await applySetup(planSetup({ ...o, command: "agent-chat", wake: true }));
    const shown = written.map((path) =>
      path.startsWith(at.projectDir) ? relative(at.projectDir, path) : `~/${relative(home, path)}`,
    );
    return { files: shown.join(", "), wake: (await inspectSetup(host.tool, at)).wake };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** The test files that drive the host: its own (named after it) and the shared ones it is in. */
function provenIn(host: Host): string {
  const stem = host.tool.split("-")[0]!;
  const files = readdirSync(AGENT_TESTS).filter((f) => f.endsWith(".test.ts"));
  const own = files.filter((f) => f === `${stem}.test.ts` || f.startsWith(`${stem}-`));
  const shared = SHARED_TESTS.filter((f) =>
    readFileSync(new URL(f, AGENT_TESTS), "utf8").includes(`"${host.tool}"`),
  );
  const names = [...shared, ...own].map((f) => f.replace(/\.test\.ts$/, ""));
  const sorted = [...names.slice(0, shared.length), ...names.slice(shared.length).sort()];
  return sorted.map((name) => `\`${name}\``).join(", ");
}

const ms = (r: WakeRecord) => `${r.p50} / ${r.max} ms${r.quick ? " (quick)" : ""}`;

/** The host's headline wake figure: the record named as the host, else its first. */
function wakeFigure(host: Host, records: readonly [string, WakeRecord][]): string {
  const own = records.filter(([, r]) => r.tool === host.tool);
  const main = own.find(([name]) => name === host.title) ?? own[0];
  return main ? ms(main[1]) : "not measured";
}

export async function firstRunTable(): Promise<string> {
  const records = Object.entries(readWakeRecords());
  const rows: string[][] = [];
  for (const host of HOSTS) {
    const asks = host.profile.asks.length > 0 ? host.profile.asks.join(", ") : "nothing";
    const setup = await afterSetup(host);
    rows.push([
      `${host.title} ${pinned(host)}`,
      setup.files,
      asks,
      host.profile.unaskedBy,
      hookPoints(host),
      setup.wake,
      wakeFigure(host, records),
      provenIn(host),
    ]);
  }
  const header = [
    "harness",
    "`setup --write --wake` writes (in an empty home)",
    "its first run asks",
    "chat tools run unasked by",
    "hooks (session start · prompt · stop)",
    "idle session woken by (`doctor` after `setup --wake`)",
    "wake p50 / max",
    "proven in `test/agents/`",
  ];
  return table(header, rows);
}

export function deliveryTable(): string {
  const records = Object.entries(readWakeRecords());
  const order = (tool: string) => HOSTS.findIndex((h) => h.tool === tool);
  records.sort(([a, x], [b, y]) => order(x.tool) - order(y.tool) || a.localeCompare(b));
  const rows = records.map(([name, r]) => [
    name,
    r.path,
    ms(r),
    String(r.n),
    `${r.date}, Node ${r.node}, load ${r.load}`,
  ]);
  return table(["harness", "woken by", "p50 / max", "wakes", "measured"], rows);
}

const marks = (name: string) =>
  [`<!-- generated: ${name} (npm run docs:harnesses) -->`, `<!-- end: ${name} -->`] as const;

/** `doc` with the text between the two marks of `name` replaced by `body`. */
export function splice(doc: string, name: string, body: string): string {
  const [open, close] = marks(name);
  const start = doc.indexOf(open);
  const end = doc.indexOf(close);
  if (start < 0 || end < start) throw new Error(`no "${open}" … "${close}" in the document`);
  return `${doc.slice(0, start + open.length)}\n${body}\n${doc.slice(end)}`;
}

/** Each document with its tables as the code and the tests give them now. */
export async function generatedDocs(): Promise<Record<string, string>> {
  const read = (path: string) => readFileSync(new URL(path, REPO), "utf8");
  return {
    [FIRST_RUN_DOC]: splice(read(FIRST_RUN_DOC), "harnesses", await firstRunTable()),
    [DELIVERY_DOC]: splice(read(DELIVERY_DOC), "agent wake", deliveryTable()),
  };
}

async function main(check: boolean): Promise<number> {
  let stale = 0;
  for (const [path, text] of Object.entries(await generatedDocs())) {
    const url = new URL(path, REPO);
    if (readFileSync(url, "utf8") === text) continue;
    if (check) {
      console.error(`${path}: its per-harness table is out of date (npm run docs:harnesses)`);
      stale++;
    } else {
      writeFileSync(url, text);
      console.log(`written: ${path}`);
    }
  }
  return stale > 0 ? 1 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  process.exitCode = await main(process.argv.includes("--check"));
}
