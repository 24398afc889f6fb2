import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { FsStore } from "../src/store/fs/fs-store.js";
import { type BenchContext, type BenchModule, type Row, type Stats, stats } from "./lib.js";

/**
 * Variables known to slow every Node start-up (NODE_EXTRA_CA_CERTS can add ~90 ms), removed
 * for the processes this module starts: users' machines do not have them.
 */
export const SLOWING_ENV = [
  "NODE_OPTIONS",
  "NODE_EXTRA_CA_CERTS",
  "NODE_DEBUG",
  "NODE_V8_COVERAGE",
];

const STANDIN = new URL("./reference/chat_standin.py", import.meta.url).pathname;

/** The Python interpreter's real path (not a version manager's shim, which adds its own start). */
function python(): string | undefined {
  const r = spawnSync(
    "python3",
    ["-c", "import os, sys; print(os.path.realpath(sys.executable))"],
    {
      encoding: "utf8",
    },
  );
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** Wall time of a whole process, from spawn to exit; rejects unless it exits `expect`. */
export function spawnTime(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  input = "",
  expect = 0,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { env, stdio: ["pipe", "ignore", "ignore"] });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === expect
        ? resolve(performance.now() - t0)
        : reject(new Error(`${cmd} ${args.join(" ")} exited ${code}`)),
    );
    // A command that exits without reading its input (most do) closes the pipe: not an error.
    child.stdin.on("error", () => {});
    child.stdin.end(input);
  });
}

const CPU_PROBE = new URL("./workers/cpu-probe.cjs", import.meta.url).pathname;

/**
 * CPU time (user + system) of a whole Node process, in ms, as the process itself tells it at
 * exit (a preloaded probe writes `process.cpuUsage()` to descriptor 3): what the machine's load
 * moves less than wall time, since waiting for a core is not counted.
 */
function spawnCpu(
  node: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  input = "",
): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(node, ["--require", CPU_PROBE, ...args], {
      env,
      stdio: ["pipe", "ignore", "ignore", "pipe"],
    });
    let told = "";
    child.stdio[3]!.on("data", (d: Buffer) => {
      told += d.toString();
    });
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 && told !== ""
        ? resolve(Number(told) / 1000)
        : reject(new Error(`node ${args.join(" ")} exited ${code}`)),
    );
    child.stdin!.on("error", () => {});
    child.stdin!.end(input);
  });
}

export interface Figure {
  name: string;
  run: () => Promise<number>;
}

/**
 * Runs every figure once per round, in an order that rotates each round, so that a burst of
 * load on the (shared) machine falls on all of them alike and their ratios stay honest.
 */
export async function rounds(
  figures: Figure[],
  n: number,
  warmup = 2,
): Promise<Map<string, Stats>> {
  const times = new Map(figures.map((f) => [f.name, [] as number[]]));
  for (let round = 0; round < n + warmup; round++) {
    for (let k = 0; k < figures.length; k++) {
      const f = figures[(k + round) % figures.length]!;
      const ms = await f.run();
      if (round >= warmup) times.get(f.name)!.push(ms);
    }
  }
  return new Map([...times].map(([name, t]) => [name, stats(t)]));
}

/** Whether the process holds an inotify instance: a `wait` that has set up its file watch. */
function watching(pid: number): boolean {
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === "anon_inode:inotify";
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A waiting process woken by a post: `args` is started, this process waits until it is parked
 * (`ready`), posts into the channel in process, and times from the start of the post to the
 * waiter's exit (its output written).
 */
async function wakeOnce(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: (pid: number) => Promise<unknown>,
  store: FsStore,
  channel: string,
): Promise<number> {
  const child = spawn(cmd, args, { env, stdio: ["ignore", "ignore", "ignore"] });
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  await ready(child.pid!);
  const t0 = performance.now();
  await store.post(channel, { from: "alice", to: "bob", body: "wake" });
  const code = await exited;
  if (code !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${code}`);
  return performance.now() - t0;
}

interface StartupOptions {
  chatPy?: string | undefined;
  /** This machine's environment. */
  env: NodeJS.ProcessEnv;
  /** The Node executables to measure with, each in a run of its own (default: this one). */
  nodes?: readonly string[];
}

export function startupBench(options: StartupOptions): BenchModule {
  return {
    name: "start-up",
    async run(ctx: BenchContext): Promise<Row[]> {
      const rows: Row[] = [];
      for (const node of options.nodes ?? [process.execPath]) {
        rows.push(...(await startupOn(node, ctx, options)));
      }
      return rows;
    },
  };
}

/** The version a Node executable reports (`v26.12.1`). */
function versionOf(node: string): string {
  return spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();
}

/** Every start-up figure with one Node: its own `node -e 0` is the baseline of each. */
async function startupOn(node: string, ctx: BenchContext, options: StartupOptions): Promise<Row[]> {
  const rows: Row[] = [];
  const n = ctx.quick ? 15 : 40;
  const { root, postRoot, refRoot, wakeRoot, waker } = await prepareRoots(ctx);

  const { machine, clean, slowing } = environments(options.env, root, ctx.tmp());

  const machinePy = python();
  const chatPy = options.chatPy ?? STANDIN;
  const py = machinePy && referenceInterpreter(chatPy, machinePy);
  const reference = options.chatPy ? "python3 chat.py" : "python3 chat.py (stand-in)";
  const on = `Node ${versionOf(node)}`;
  const cli =
    (env: NodeJS.ProcessEnv, args: string[], input = "") =>
    () =>
      spawnTime(node, [ctx.cli, ...args], env, input);
  // The same line for ours and the reference (whose `post` requires a title).
  const post = [
    "post",
    "small",
    "--from",
    "alice",
    "--to",
    "nobody",
    "--title",
    "t",
    "--body",
    "x",
  ];
  // The same post with its body on stdin (a socket, as Node's spawn gives it), as an agent
  // posts a long message.
  const postStdin = post.filter((a, i) => a !== "--body" && post[i - 1] !== "--body");
  const hookInput = JSON.stringify({ hook_event_name: "UserPromptSubmit", prompt: "go" });
  const bob = { ...clean, AGENT_CHAT_NAME: "bob" };

  const figures: Figure[] = [
    { name: "node -e 0", run: () => spawnTime(node, ["-e", "0"], clean) },
    { name: "--version", run: cli(clean, ["--version"]) },
    { name: "--help", run: cli(clean, ["--help"]) },
    { name: "post", run: cli({ ...clean, AGENT_CHAT_ROOT: postRoot }, post) },
    {
      name: "post (stdin)",
      run: cli({ ...clean, AGENT_CHAT_ROOT: postRoot }, postStdin, "x"),
    },
    { name: "read", run: cli(clean, ["read", "small", "--as", "bob", "--peek"]) },
    { name: "peek", run: cli(clean, ["peek", "small"]) },
    { name: "channels", run: cli(clean, ["channels"]) },
    { name: "tasks", run: cli(clean, ["tasks", "small"]) },
    { name: "hook prompt", run: cli(bob, ["hook", "prompt"], hookInput) },
  ];
  if (py) {
    const ref = (args: string[], at: string) => () =>
      spawnTime(py, [chatPy, ...args], { ...clean, AGENT_CHAT_ROOT: at });
    figures.push(
      { name: "python3 -c pass", run: () => spawnTime(py, ["-c", "pass"], clean) },
      {
        name: "ref post",
        run: ref(post, refRoot),
      },
      { name: "ref read", run: ref(["read", "small", "--as", "nobody"], root) },
    );
  }
  const s = await rounds(figures, n);
  const at = (name: string) => s.get(name)!;
  const group = `start-up (clean env, ${on})`;
  const vsNode = (figure: string, name: string, goal?: number): Row => {
    const row: Row = {
      group,
      figure,
      unit: "ms",
      stats: at(name),
      baseline: { name: "node -e 0", stats: at("node -e 0") },
    };
    if (goal !== undefined) {
      row.goal = `≤ ${goal}× node -e 0`;
      row.met = at(name).median / at("node -e 0").median <= goal;
    }
    return row;
  };
  rows.push(
    vsNode("`agent-chat --version`", "--version", 1.15),
    vsNode("`agent-chat --help`", "--help"),
    vsNode("`agent-chat post …` (1,000-msg channel)", "post", 1.3),
    vsNode("`agent-chat post …` with the body on stdin", "post (stdin)"),
    vsNode("`agent-chat read --peek` (1,000-msg channel)", "read", 1.3),
    vsNode("`agent-chat peek`", "peek", 1.3),
    vsNode("`agent-chat channels`", "channels", 1.3),
    vsNode("`agent-chat tasks`", "tasks"),
    vsNode("`agent-chat hook prompt` (1 unread)", "hook prompt", 1.3),
  );
  rows.push(...referenceRows(group, at, py && { py, chatPy, reference }));

  const cpu =
    (args: string[], env = clean, input = "") =>
    () =>
      spawnCpu(node, args, env, input);
  const cpuFigures: Figure[] = [
    { name: "node -e 0", run: cpu(["-e", "0"]) },
    { name: "--version", run: cpu([ctx.cli, "--version"]) },
    { name: "post", run: cpu([ctx.cli, ...post], { ...clean, AGENT_CHAT_ROOT: postRoot }) },
    {
      name: "post (stdin)",
      run: cpu([ctx.cli, ...postStdin], { ...clean, AGENT_CHAT_ROOT: postRoot }, "x"),
    },
    { name: "read", run: cpu([ctx.cli, "read", "small", "--as", "bob", "--peek"]) },
    { name: "hook prompt", run: cpu([ctx.cli, "hook", "prompt"], bob, hookInput) },
  ];
  rows.push(...cpuRows(await rounds(cpuFigures, Math.ceil(n / 2)), on));

  const wakeEnv = { ...clean, AGENT_CHAT_ROOT: wakeRoot };
  rows.push(await wakeRow(ctx, node, group, wakeEnv, waker, py && { py, chatPy, reference }));
  await waker.close();
  if (slowing.length > 0) {
    const figures = {
      "node -e 0": () => spawnTime(node, ["-e", "0"], machine),
      "--version": cli(machine, ["--version"]),
      post: cli({ ...machine, AGENT_CHAT_ROOT: postRoot }, post),
      "hook prompt": cli({ ...machine, AGENT_CHAT_NAME: "bob" }, ["hook", "prompt"], hookInput),
    };
    rows.push(...(await contextRows(figures, `${slowing.join(", ")}; ${on}`, Math.ceil(n / 2))));
  }
  return rows;
}

/**
 * `--chat-py=PATH`, else `$AGENT_CHAT_REFERENCE`, else the real reference 0.7 that `.ci/run`
 * installs (`$AGENT_CHAT_REFERENCE_0_7`), when it names a file.
 */
export function chatPyFrom(argv: readonly string[], env: NodeJS.ProcessEnv): string | undefined {
  const given =
    argv.find((a) => a.startsWith("--chat-py="))?.slice(10) ??
    env.AGENT_CHAT_REFERENCE ??
    env.AGENT_CHAT_REFERENCE_0_7;
  if (!given) return undefined;
  if (!existsSync(given)) throw new Error(`--chat-py: no such file ${given}`);
  // Not resolved: a console script's own path is what users run (its virtual environment's).
  return join(given);
}

/**
 * How the reference is started: a `.py` file by the machine's Python; a console command (the
 * one PyPI's agent-chat-plugin installs) by the interpreter its `#!` line names, which is its
 * virtual environment's (that Python finds the `chat` module; the machine's would not).
 */
export function referenceInterpreter(chatPy: string, machinePython: string): string {
  const first = readFileSync(chatPy, "utf8").split("\n", 1)[0]!;
  const shebang = /^#!\s*(\S*python[\d.]*)\s*$/.exec(first)?.[1];
  return shebang && !shebang.endsWith("/env") ? shebang : machinePython;
}

/**
 * The roots the figures run in. Each kind of figure has its own, so that no figure's writes grow
 * another's work (the hook counts unread messages in every channel of its root).
 */
async function prepareRoots(ctx: BenchContext) {
  const root = ctx.tmp(); // read, peek, channels, tasks, hook: bob has one unread message
  const postRoot = ctx.tmp(); // our posts
  const refRoot = ctx.tmp(); // the reference's posts
  const wakeRoot = ctx.tmp(); // the wakes
  const fill = async (at: string) => {
    const store = new FsStore(at);
    await store.init("small");
    for (let i = 0; i < 1000; i++)
      await store.post("small", { from: "filler", to: "nobody", body: `old ${i}` });
    return store;
  };
  const setup = await fill(root);
  // bob has read the channel up to this one message, as an agent that keeps up has.
  await setup.read("small", { as: "bob" });
  await setup.post("small", { from: "alice", to: "bob", body: "unread" });
  await setup.addTask("small", { title: "t", from: "alice" });
  await setup.close();
  await (await fill(postRoot)).close();
  await (await fill(refRoot)).close();
  const waker = new FsStore(wakeRoot);
  await waker.init("wake");
  await waker.init("pywake");
  return { root, postRoot, refRoot, wakeRoot, waker };
}

/** Our post and read against the reference's, and the interpreter alone; or why there are none. */
function referenceRows(
  group: string,
  at: (name: string) => Stats,
  python: { py: string; chatPy: string; reference: string } | undefined | "" | null,
): Row[] {
  if (!python) {
    return [
      {
        group,
        figure: "reference rows",
        unit: "—",
        stats: stats([]),
        note: "python3 not found: no reference baseline",
      },
    ];
  }
  const { py, chatPy, reference } = python;
  return [
    {
      group,
      figure: "`agent-chat post …`",
      unit: "ms",
      stats: at("post"),
      baseline: { name: `${reference} post`, stats: at("ref post") },
      goal: `≤ 0.6× ${reference} post`,
      met: at("post").median / at("ref post").median <= 0.6,
    },
    {
      group,
      figure: "`agent-chat read --peek`",
      unit: "ms",
      stats: at("read"),
      baseline: { name: `${reference} read`, stats: at("ref read") },
    },
    {
      group,
      figure: "python3 -c pass (the interpreter alone)",
      unit: "ms",
      stats: at("python3 -c pass"),
      baseline: { name: "node -e 0", stats: at("node -e 0") },
      note: `${py}, ${chatPy}`,
    },
  ];
}

/** The wake of a waiting process: parked, then woken by a post; the reference's beside it. */
async function wakeRow(
  ctx: BenchContext,
  node: string,
  group: string,
  env: NodeJS.ProcessEnv,
  waker: FsStore,
  python: { py: string; chatPy: string; reference: string } | undefined | "" | null,
): Promise<Row> {
  const ours: number[] = [];
  for (let i = 0; i < (ctx.quick ? 10 : 30) + 2; i++) {
    const ms = await wakeOnce(
      node,
      [ctx.cli, "wait", "wake", "--as", "bob", "--timeout", "30"],
      env,
      async (pid) => {
        while (!watching(pid)) await pause(5);
      },
      waker,
      "wake",
    );
    if (i >= 2) ours.push(ms);
  }
  const row: Row = {
    group,
    figure: "wake of a waiting `agent-chat wait` process (post → its exit)",
    unit: "ms",
    stats: stats(ours),
  };
  if (!python) return row;
  // The reference sleep-polls (every 5 s by default): each post lands at a random moment of its
  // cycle. Fewer samples, they take seconds each.
  const { py, chatPy, reference } = python;
  const theirs: number[] = [];
  for (let i = 0; i < (ctx.quick ? 3 : 8); i++) {
    theirs.push(
      await wakeOnce(
        py,
        [chatPy, "wait", "pywake", "--as", "bob", "--timeout", "30"],
        env,
        () => pause(500 + Math.random() * 5000),
        waker,
        "pywake",
      ),
    );
  }
  row.baseline = { name: `${reference} wait (sleep-poll)`, stats: stats(theirs) };
  return row;
}

/** The CPU time figures against `node -e 0`'s, with the goals of the wall-time ones. */
function cpuRows(s: Map<string, Stats>, on: string): Row[] {
  const labels: Array<[string, string, number?]> = [
    ["--version", "`agent-chat --version`", 1.15],
    ["post", "`agent-chat post …` (1,000-msg channel)", 1.3],
    ["post (stdin)", "`agent-chat post …` with the body on stdin"],
    ["read", "`agent-chat read --peek` (1,000-msg channel)", 1.3],
    ["hook prompt", "`agent-chat hook prompt` (1 unread)", 1.3],
  ];
  return labels.map(([name, figure, goal]) => {
    const row: Row = {
      group: `start-up CPU time (user + system at exit, clean env, ${on})`,
      figure,
      unit: "ms",
      stats: s.get(name)!,
      baseline: { name: "node -e 0", stats: s.get("node -e 0")! },
    };
    if (goal === undefined) return row;
    row.goal = `≤ ${goal}× node -e 0 (context: the goal is on wall time)`;
    row.met = s.get(name)!.median / s.get("node -e 0")!.median <= goal;
    return row;
  });
}

/** The machine's own environment (the variables that slow Node kept), as context only. */
async function contextRows(
  figures: Record<"node -e 0" | "--version" | "post" | "hook prompt", () => Promise<number>>,
  slowing: string,
  n: number,
): Promise<Row[]> {
  const m = await rounds(
    Object.entries(figures).map(([name, run]) => ({ name, run })),
    n,
  );
  const labels = {
    "node -e 0": "node -e 0",
    "--version": "`agent-chat --version`",
    post: "`agent-chat post …`",
    "hook prompt": "`agent-chat hook prompt`",
  };
  return Object.entries(labels).map(([name, figure]) => {
    const row: Row = {
      group: `context: this machine's env (${slowing})`,
      figure,
      unit: "ms",
      stats: m.get(name)!,
    };
    if (name !== "node -e 0") row.baseline = { name: "node -e 0", stats: m.get("node -e 0")! };
    return row;
  });
}

/**
 * The machine's environment (no agent-chat settings but the root), the same without the
 * variables known to slow Node, and which of those the machine had. Both give the user's
 * folders (config, cache, state) a home of the bench's own, `home`: every command then reads
 * what these runs wrote there (pins, trust, the code cache the warm-up rounds make), as on a
 * user's machine, not what other work left in this machine's (its tests' policy pins made
 * `trust.json` 56 kB here, which every command parses).
 */
export function environments(env: NodeJS.ProcessEnv, root: string, home: string) {
  const machine: NodeJS.ProcessEnv = {
    ...env,
    AGENT_CHAT_ROOT: root,
    XDG_CONFIG_HOME: join(home, "config"),
    XDG_CACHE_HOME: join(home, "cache"),
    XDG_STATE_HOME: join(home, "state"),
  };
  for (const k of Object.keys(machine)) {
    if (k.startsWith("AGENT_CHAT_") && k !== "AGENT_CHAT_ROOT") delete machine[k];
  }
  const clean: NodeJS.ProcessEnv = { ...machine };
  for (const k of SLOWING_ENV) delete clean[k];
  return { machine, clean, slowing: SLOWING_ENV.filter((k) => machine[k]) };
}
