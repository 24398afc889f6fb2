import { execFile, spawn } from "node:child_process";
import { constants, promises as fsp } from "node:fs";
import { dirname, join, sep } from "node:path";
import { validateName } from "../core/names.js";
import { LineSplitter } from "../core/ndjson.js";
import { createFileExclusive, entryKind, removeFileEntry } from "../fsutil/root-files.js";
import { canonicalRoot, isNatsUrl, printableRoot, sameRoot } from "../store/roots.js";
import { type SetupLocations, shellQuote } from "./host.js";
import { hostNamed, inspectSetup, type SetupState } from "./setup.js";
import { agentChatsOnPath } from "./which-cli.js";

export type CheckStatus = "ok" | "warn" | "fail";

export interface DoctorCheck {
  /** What was checked: `root`, `identity`, a tool's name, `server`, `hook`. */
  check: string;
  status: CheckStatus;
  message: string;
  /** On warn or fail: what to do about it. */
  fix?: string;
}

export interface DoctorOptions extends SetupLocations {
  /** `--root` or `$AGENT_CHAT_ROOT` when `rootGiven`, else the default root. */
  root: string;
  /** Whether the user named the root: if not, the root the tools' files name is checked. */
  rootGiven: boolean;
  /** `--as` or `$AGENT_CHAT_NAME`, as given (checked here); unset: the tools' files name it. */
  agent: string | undefined;
  tools: readonly string[];
  /** Whether the user limited the tools (`--tool`): then a tool not set up is a failure. */
  toolsChosen: boolean;
  /** How to start agent-chat itself: the executable and its first arguments. */
  command: readonly string[];
  /** The environment the server and the hook are started with. */
  env: NodeJS.ProcessEnv;
  /** How long the server and the hook each get to answer. */
  timeoutMs: number;
}

export interface DoctorReport {
  ok: boolean;
  checks: DoctorCheck[];
}

/**
 * Checks a machine end to end; never throws for what it finds, it reports it. The identity and
 * the root not given are the ones the files setup wrote name (when the tools set up agree).
 */
export async function runDoctor(options: DoctorOptions): Promise<DoctorReport> {
  const found = await inspectTools(options);
  const root = options.rootGiven ? undefined : namedByTools(found, "root");
  const o = root?.value === undefined ? options : { ...options, root: root.value };
  const checks: DoctorCheck[] = [await checkRoot(o.root, root?.from), await checkOnPath(o)];
  const agent = checkIdentity(o.agent, namedByTools(found, "agent"), checks);
  checks.push(...checkTools(o, found, agent));
  checks.push(...(await checkTracked(o, found)));
  checks.push(await checkServer(o, agent));
  checks.push(await checkHook(o, agent));
  return { ok: checks.every((c) => c.status !== "fail"), checks };
}

/** What setup left in one tool's files, or why they cannot be read. */
type Found = { tool: string; state: SetupState } | { tool: string; error: string };

async function inspectTools(o: DoctorOptions): Promise<Found[]> {
  const found: Found[] = [];
  for (const tool of o.tools) {
    try {
      found.push({ tool, state: await inspectSetup(tool, o) });
    } catch (err) {
      found.push({ tool, error: reason(err) });
    }
  }
  return found;
}

/** The value the set-up tools' files give `key`: one (and where), several, or none. */
interface Named {
  value?: string;
  from?: string;
  /** Every value with its file, when the files disagree. */
  conflict?: string;
}

function namedByTools(found: Found[], key: "agent" | "root"): Named {
  const seen = new Map<string, string>();
  for (const f of found) {
    if (!("state" in f) || !f.state.server) continue;
    const value = f.state[key];
    if (value !== undefined && !seen.has(value)) seen.set(value, f.state.identityFile);
  }
  if (seen.size === 1) {
    const [value, from] = [...seen][0]!;
    return { value, from };
  }
  if (seen.size === 0) return {};
  return { conflict: [...seen].map(([value, file]) => `${value} (${file})`).join(", ") };
}

function ok(check: string, message: string): DoctorCheck {
  return { check, status: "ok", message };
}

function bad(check: string, status: "warn" | "fail", message: string, fix: string): DoctorCheck {
  return { check, status, message, fix };
}

const reason = (err: unknown) => (err as Error)?.message ?? String(err);

/** What is at `path`; nothing when a folder on the way is a file (ENOTDIR). */
function kindAt(path: string): ReturnType<typeof entryKind> {
  try {
    return entryKind(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOTDIR") return undefined;
    throw err;
  }
}

async function checkRoot(root: string, from: string | undefined): Promise<DoctorCheck> {
  const check = await checkRootAt(root);
  return from === undefined ? check : { ...check, message: `${check.message}, from ${from}` };
}

async function checkRootAt(root: string): Promise<DoctorCheck> {
  if (isNatsUrl(root)) return checkNatsRoot(root);
  try {
    return await checkRootFolder(root);
  } catch (err) {
    return bad(
      "root",
      "fail",
      `${root} cannot be looked at (${reason(err)})`,
      "give yourself access to it, or give another folder with --root or AGENT_CHAT_ROOT",
    );
  }
}

/** Shown without the credentials a URL may carry; one that does not parse fails here. */
function checkNatsRoot(root: string): DoctorCheck {
  try {
    return ok("root", `${canonicalRoot(root)} (a NATS root: no folder to check)`);
  } catch (err) {
    return bad(
      "root",
      "fail",
      reason(err),
      "give nats://host:port/namespace with --root or AGENT_CHAT_ROOT",
    );
  }
}

async function checkRootFolder(root: string): Promise<DoctorCheck> {
  const kind = kindAt(root);
  if (kind === "link") {
    return bad(
      "root",
      "fail",
      `${root} is a symbolic link; agent-chat never follows one in a root`,
      "give the real folder with --root or AGENT_CHAT_ROOT",
    );
  }
  if (kind !== undefined && kind !== "dir") {
    return bad(
      "root",
      "fail",
      `${root} is not a folder`,
      "move it aside, or give another folder with --root or AGENT_CHAT_ROOT",
    );
  }
  if (kind === undefined) {
    // Created on first use: the nearest folder that exists must take a new entry.
    let parent = dirname(root);
    while (kindAt(parent) === undefined && dirname(parent) !== parent) parent = dirname(parent);
    try {
      if (kindAt(parent) !== "dir") throw new Error(`${parent} is not a folder`);
      await fsp.access(parent, constants.W_OK);
    } catch (err) {
      return bad(
        "root",
        "fail",
        `${root} does not exist and cannot be created (${reason(err)})`,
        "create it, or give another folder with --root or AGENT_CHAT_ROOT",
      );
    }
    return ok("root", `${root} (does not exist yet; created on first use)`);
  }
  const name = `.agent-chat-doctor-${process.pid}`;
  try {
    await createFileExclusive(root, name, "");
  } catch (err) {
    return bad(
      "root",
      "fail",
      `${root} is not writable (${reason(err)})`,
      "give yourself write access to it, or give another folder with --root",
    );
  }
  removeFileEntry(join(root, name));
  return ok("root", `${root} (writable)`);
}

/**
 * Which `agent-chat` a bare name starts: ours, or chat.py 0.7's console script of the same
 * name (PyPI `agent-chat-plugin`), which would answer the hooks and MCP entries in ours' place.
 */
async function checkOnPath(o: DoctorOptions): Promise<DoctorCheck> {
  const found = await agentChatsOnPath(o.env.PATH);
  const first = found[0];
  const running = o.command.slice(1).join(" ") || o.command[0];
  const reference = found.find((f) => f.kind === "reference");
  if (first?.kind === "ours") {
    const also = reference
      ? `; chat.py's is also installed, at ${reference.path} (run it by that path)`
      : "";
    return ok("path", `agent-chat on PATH is ours, ${first.path}${also}`);
  }
  const fix =
    `put ours first on PATH, or run ours by its path (${running}); ` +
    "setup then writes that path into the hooks and MCP entries (or pass --command)";
  if (first?.kind === "reference") {
    return bad(
      "path",
      "warn",
      `agent-chat on PATH is chat.py 0.7's (Python, agent-chat-plugin), ${first.path}, not ours`,
      fix,
    );
  }
  if (first) return bad("path", "warn", `agent-chat on PATH is ${first.path}, not ours`, fix);
  return bad(
    "path",
    "warn",
    "no agent-chat on PATH",
    `install ours on PATH (npm install -g), or ${fix}`,
  );
}

function checkIdentity(
  given: string | undefined,
  named: Named,
  checks: DoctorCheck[],
): string | undefined {
  const fix = "pass --as NAME or set AGENT_CHAT_NAME=NAME";
  if (!given && named.conflict) {
    checks.push(bad("identity", "fail", `the tools' files name ${named.conflict}`, fix));
    return undefined;
  }
  const agent = given || named.value;
  if (!agent) {
    checks.push(bad("identity", "fail", "no identity", fix));
    return undefined;
  }
  try {
    validateName("agent", agent);
  } catch (err) {
    checks.push(bad("identity", "fail", reason(err), "pass a valid name with --as"));
    return undefined;
  }
  checks.push(ok("identity", given ? agent : `${agent} (from ${named.from})`));
  return agent;
}

function checkTools(o: DoctorOptions, found: Found[], agent: string | undefined): DoctorCheck[] {
  const setupCommand = (tool: string) =>
    `run: agent-chat setup ${tool} --as ${shellQuote(agent ?? "NAME")} --write`;
  const checks: DoctorCheck[] = found.map((f) => {
    if ("error" in f) {
      return bad(
        f.tool,
        "fail",
        f.error,
        `fix or move aside that file, then ${setupCommand(f.tool)}`,
      );
    }
    // A tool the user does not use is not an error, unless they asked about it by name.
    if (!f.state.server) {
      return bad(f.tool, o.toolsChosen ? "fail" : "warn", "not set up", setupCommand(f.tool));
    }
    return checkSetUpTool(o, f.state, agent, setupCommand(f.tool));
  });
  // Which path wakes each set-up tool's idle session, read from the files setup wrote.
  for (const f of found) {
    if ("state" in f && f.state.server) checks.push(ok(`${f.tool} wake`, f.state.wake));
  }
  const setUp = found.some((f) => "state" in f && f.state.server);
  if (!setUp && !o.toolsChosen) {
    checks.push(
      bad(
        "tools",
        "fail",
        "agent-chat is set up in none of the agent tools",
        "set up the one you use with one of the commands above",
      ),
    );
  }
  return checks;
}

/** One tool whose files name the server: what of the rest is missing or differs, if anything. */
function checkSetUpTool(
  o: DoctorOptions,
  state: SetupState,
  agent: string | undefined,
  setupCommand: string,
): DoctorCheck {
  const problems: { message: string; fix: string }[] = [];
  const add = (message: string, fix = setupCommand) => problems.push({ message, fix });
  if (state.missingHooks.length > 0) {
    add(`no agent-chat hook for ${state.missingHooks.join(", ")} in ${state.hooksFile}`);
  }
  if (agent && state.agent !== undefined && state.agent !== agent) {
    add(`its files run agent-chat as ${state.agent}, not ${agent}`);
  }
  if (state.root !== undefined && !sameRoot(state.root, o.root)) {
    const theirs = printableRoot(state.root);
    add(
      `its files use the root ${theirs}, not ${printableRoot(o.root)}`,
      `check that one: agent-chat --root ${shellQuote(theirs)} doctor, or ${setupCommand}`,
    );
  }
  for (const gap of state.gaps) add(gap);
  if (state.pending) {
    const answer = hostNamed(state.tool).answerPending;
    add(state.pending, answer ? answer(setupCommand) : setupCommand);
  }
  if (problems.length === 0) {
    return ok(state.tool, `server in ${state.serverFile}, hooks in ${state.hooksFile}`);
  }
  const message = `server in ${state.serverFile}; ${problems.map((p) => p.message).join("; ")}`;
  return bad(state.tool, "warn", message, problems[0]!.fix);
}

/**
 * The per-user files of the set-up tools that git tracks: the exclude list setup writes keeps
 * only untracked files out of a commit, so a file committed before setup is shared again.
 */
async function checkTracked(o: DoctorOptions, found: Found[]): Promise<DoctorCheck[]> {
  const mine = found
    .filter((f) => "state" in f && f.state.server)
    .flatMap((f) => hostNamed(f.tool).personalFiles.map((path) => ({ tool: f.tool, path })));
  if (mine.length === 0) return [];
  const tracked = await gitTracked(
    o,
    mine.map((m) => m.path.split(sep).join("/")),
  );
  return mine
    .filter((m) => tracked.has(m.path.split(sep).join("/")))
    .map((m) =>
      bad(
        "git",
        "warn",
        `${m.path} (${m.tool}) is tracked by git: it names the agent and the root, and a commit shares them`,
        `untrack it, keeping your copy: git rm --cached ${shellQuote(m.path)}, then commit`,
      ),
    );
}

/** Which of `paths` (relative to the project folder) git tracks; none outside a repository. */
function gitTracked(o: DoctorOptions, paths: string[]): Promise<Set<string>> {
  return new Promise((resolveTracked) => {
    execFile(
      "git",
      ["ls-files", "-z", "--", ...paths],
      { cwd: o.projectDir, env: o.env, timeout: o.timeoutMs },
      (err, stdout) => resolveTracked(new Set(err ? [] : stdout.split("\0").filter(Boolean))),
    );
  });
}

/** The longest stdout line read from a child: its answers are a few KiB; a flood is cut short. */
const MAX_CHILD_LINE_BYTES = 8 * 1024 * 1024;

interface ChildRun {
  code: number | null;
  stderr: string;
  timedOut: boolean;
}

/**
 * Starts agent-chat with `args`, writes `input`, and hands each stdout line to `onLine`, which
 * returns true when it has what it wanted (the child is then killed); resolves when the child is
 * gone, or after the timeout (killed).
 */
function runChild(
  o: DoctorOptions,
  args: string[],
  input: (write: (text: string) => void, end: () => void) => void,
  onLine: (line: string, write: (text: string) => void) => boolean,
): Promise<ChildRun> {
  return new Promise((resolveRun) => {
    const [exe, ...first] = o.command;
    const child = spawn(exe!, [...first, "--root", o.root, ...args], {
      env: o.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const run: ChildRun = { code: null, stderr: "", timedOut: false };
    const timer = setTimeout(() => {
      run.timedOut = true;
      child.kill("SIGKILL");
    }, o.timeoutMs);
    const write = (text: string) => {
      if (child.stdin.writable) child.stdin.write(text);
    };
    const lines = new LineSplitter({
      maxLineBytes: MAX_CHILD_LINE_BYTES,
      onLine: (line) => {
        if (onLine(line.toString("utf8"), write)) child.kill("SIGTERM");
      },
      onTooLong: () => {
        lines.close();
        run.stderr = `it wrote a line longer than ${MAX_CHILD_LINE_BYTES} bytes\n${run.stderr}`;
        child.kill("SIGTERM");
      },
    });
    child.stdout.on("data", (chunk: Buffer) => lines.push(chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      if (run.stderr.length < 4096) run.stderr += chunk;
    });
    child.stdin.on("error", () => {}); // a child that exits early closes its stdin
    child.on("error", (err) => {
      run.stderr += reason(err);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      run.code = code;
      resolveRun(run);
    });
    input(write, () => child.stdin.end());
  });
}

const firstLine = (text: string) => text.trim().split("\n")[0] ?? "";

async function checkServer(o: DoctorOptions, agent: string | undefined): Promise<DoctorCheck> {
  const args = ["mcp", ...(agent ? ["--as", agent] : [])];
  const rpc = (id: number | undefined, method: string, params: object = {}) =>
    `${JSON.stringify({ jsonrpc: "2.0", ...(id !== undefined && { id }), method, params })}\n`;
  let tools: number | undefined;
  let error: string | undefined;
  const run = await runChild(
    o,
    args,
    (write) =>
      write(
        rpc(1, "initialize", {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "agent-chat-doctor", version: "1" },
        }),
      ),
    (line, write) => {
      let msg: { id?: unknown; result?: { tools?: unknown[] }; error?: { message?: string } };
      try {
        msg = JSON.parse(line);
      } catch {
        error = `it wrote a line that is not JSON-RPC: ${line.slice(0, 200)}`;
        return true;
      }
      if (msg.error) {
        error = `it answered an error: ${msg.error.message}`;
        return true;
      }
      if (msg.id === 1) {
        write(rpc(undefined, "notifications/initialized"));
        write(rpc(2, "tools/list"));
      } else if (msg.id === 2) {
        tools = Array.isArray(msg.result?.tools) ? msg.result.tools.length : 0;
        return true;
      }
      return false;
    },
  );
  const fix = `run it yourself to see why: agent-chat mcp${agent ? ` --as ${shellQuote(agent)}` : ""}`;
  if (tools !== undefined) return ok("server", `starts and lists ${tools} tools`);
  if (error) return bad("server", "fail", error, fix);
  if (run.timedOut) {
    return bad("server", "fail", `no answer to tools/list within ${o.timeoutMs} ms`, fix);
  }
  const why = firstLine(run.stderr) || `exit ${run.code}`;
  return bad("server", "fail", `exited before answering tools/list (${why})`, fix);
}

async function checkHook(o: DoctorOptions, agent: string | undefined): Promise<DoctorCheck> {
  if (!agent) return bad("hook", "warn", "not run: no identity", "set the identity (see above)");
  const run = await runChild(
    o,
    ["hook", "prompt", "--as", agent],
    (write, end) => {
      write("{}");
      end();
    },
    () => false,
  );
  const fix = `run it yourself to see why: echo '{}' | agent-chat hook prompt --as ${shellQuote(agent)}`;
  if (run.timedOut) {
    return bad("hook", "fail", `did not finish within ${o.timeoutMs} ms`, fix);
  }
  if (run.code !== 0) {
    const why = firstLine(run.stderr);
    return bad("hook", "fail", `exit ${run.code}${why ? ` (${why})` : ""}`, fix);
  }
  return ok("hook", "runs (exit 0)");
}
