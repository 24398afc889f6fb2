import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import type { Command } from "commander";
import { type CliContext, UsageError } from "../../cli/context.js";
import { EXIT } from "../../cli/exit-codes.js";
import { isAgentChatError } from "../../core/errors.js";
import { identity } from "../../core/names.js";
import type { PathLeaseInfo } from "../../store/types.js";
import { type Blocked, blockedPaths } from "./index.js";

/**
 * `agent-chat guard`: a git pre-commit hook that refuses a commit staging a path under another
 * agent's live exclusive path lease. It never blocks by accident: whatever keeps it from
 * knowing (no git, no root, no channel, no leases) lets the commit through, with one line why.
 */
export function registerGuardCommand(program: Command, ctx: CliContext): void {
  program
    .command("guard")
    .description("git pre-commit check: refuse staged paths under another agent's path lease")
    .argument("[channels]", "the channels whose leases count, comma-separated (default: all)")
    .option("--as <name>", "who commits (default: $AGENT_CHAT_NAME); your own leases pass")
    .option("--dir <path>", "the repository (default: current folder)")
    .addHelpText(
      "after",
      "\nExits 0 (the commit goes on) or 3 (refused, naming holder, pattern and until when).\n" +
        "Installed by `agent-chat setup git-hook [CHANNELS]`.\n\nExample:\n  agent-chat guard review --as bob",
    )
    .action(async (channels: string | undefined, opts: { as?: string; dir?: string }) => {
      const verdict = await guard(ctx, channels, opts);
      if (ctx.json) ctx.printJson(verdict);
      else if (verdict.blocked.length === 0) ctx.err(`agent-chat guard: ${verdict.why}\n`);
      else ctx.err(refusal(verdict.blocked));
      if (verdict.blocked.length > 0) ctx.exitCode = EXIT.CLAIM_LOST;
    });
}

interface Verdict {
  /** Why the commit goes on (or the count of refused paths). */
  why: string;
  blocked: Blocked[];
}

const through = (why: string): Verdict => ({ why: `${why}; commit let through`, blocked: [] });

/**
 * How long the guard may look for leased paths. Each match is linear, but a commit of many
 * paths under many leases still adds up, and a pre-commit hook must not hold git for long:
 * what is left unchecked then lets the commit through, saying so.
 */
const GUARD_MS = 10_000;

async function guard(
  ctx: CliContext,
  channelList: string | undefined,
  opts: { as?: string; dir?: string },
): Promise<Verdict> {
  const staged = stagedPaths(opts.dir ?? process.cwd());
  if (typeof staged === "string") return through(staged);
  if (staged.length === 0) return through("nothing staged");
  const me = whoAmI(ctx, opts.as);
  if (ctx.rootSpec.kind === "folder" && !existsSync(ctx.root))
    return through(`root ${ctx.root} does not exist`);
  let leases: PathLeaseInfo[];
  try {
    leases = await leasesOf(ctx, channelList);
  } catch (err) {
    return through(`cannot read the leases of ${ctx.root} (${(err as Error).message})`);
  }
  if (leases.length === 0) return through(`no path leases in ${ctx.root}`);
  const limit = { until: Date.now() + GUARD_MS, now: Date.now };
  const { blocked, unchecked } = await blockedPaths(leases, staged, me ?? "", limit);
  if (blocked.length > 0) return { why: `${blocked.length} staged path(s) leased`, blocked };
  if (unchecked > 0) {
    return through(
      `${unchecked} of ${staged.length} staged path(s) not checked against the leases within ${GUARD_MS / 1000} s`,
    );
  }
  return through(
    `${staged.length} staged path(s), none under another agent's lease${me ? "" : " (identity unknown: set AGENT_CHAT_NAME)"}`,
  );
}

/** The staged paths, or why they cannot be known. */
function stagedPaths(dir: string): string[] | string {
  try {
    // --no-renames: a file moved out of a lease is staged as deleted at its old path, which
    // the lease covers (with rename detection git would list only the new path).
    const out = execFileSync("git", ["diff", "--cached", "--name-only", "--no-renames", "-z"], {
      cwd: dir,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      maxBuffer: 64 * 1024 * 1024,
    });
    return out.split("\0").filter((p) => p !== "");
  } catch (err) {
    return `cannot list the staged paths in ${dir} (${(err as Error).message.split("\n")[0]})`;
  }
}

function whoAmI(ctx: CliContext, given: string | undefined): string | undefined {
  const name = given ?? ctx.env.AGENT_CHAT_NAME;
  return name ? identity(name) : undefined;
}

async function leasesOf(
  ctx: CliContext,
  channelList: string | undefined,
): Promise<PathLeaseInfo[]> {
  const store = await ctx.open();
  const names =
    channelList === undefined
      ? (await store.channels()).map((c) => c.name)
      : channelList
          .split(",")
          .map((c) => c.trim())
          .filter((c) => c !== "");
  const out: PathLeaseInfo[] = [];
  for (const name of names) {
    try {
      out.push(...(await store.pathLeases(name)));
    } catch (err) {
      // A named channel that is not there reserves nothing; any other failure is said once.
      if (!isAgentChatError(err, "CHANNEL_NOT_FOUND")) throw err;
    }
  }
  return out;
}

function refusal(blocked: Blocked[]): string {
  const lines = blocked.map(
    ({ path, lease: l }) =>
      `  ${path}: leased by ${l.holder} (${l.pattern}, ${l.lock ? `chat.py path lock ${l.lock}` : `token ${l.token}`}) until ${l.expiresAt}` +
      (l.reason ? ` — ${l.reason}` : ""),
  );
  return (
    `agent-chat guard: commit refused: ${blocked.length} staged path(s) under another agent's lease\n` +
    `${lines.join("\n")}\n` +
    "Unstage them, ask the holder to release, or wait for the lease to end (git commit --no-verify skips this check).\n"
  );
}

/** `setup git-hook`: installs the guard and says what it did. */
export function setupGitHook(
  ctx: CliContext,
  channels: string | undefined,
  opts: { as?: string; dir?: string; command?: string },
): void {
  const done = installGitHook(ctx, channels, opts);
  if (ctx.json) {
    ctx.printJson(done);
    return;
  }
  const what = {
    created: "created",
    added: "added the guard to your existing",
    updated: "updated the guard in",
    unchanged: "the guard is already in",
  }[done.action];
  ctx.out(`${what} ${done.hook}: it runs \`${done.command}\` before each commit\n`);
}

const BEGIN = "# >>> agent-chat guard >>>";
const END = "# <<< agent-chat guard <<<";

export interface HookSetup {
  hook: string;
  action: "created" | "added" | "updated" | "unchanged";
  command: string;
}

/**
 * Installs the guard in the repository's pre-commit hook (where git looks for it: `core.hooksPath`
 * and worktrees count). A hook of ours is updated in place; a shell hook of someone else keeps
 * all it does, with our block run first; a hook in another language is left alone (refused).
 */
export function installGitHook(
  ctx: CliContext,
  channels: string | undefined,
  opts: { as?: string; dir?: string; command?: string },
): HookSetup {
  const dir = resolve(opts.dir ?? process.cwd());
  const hook = hookPath(dir);
  const command = guardCommand(ctx, channels, opts);
  const block = `${BEGIN}\n${command} || exit $?\n${END}\n`;
  const existing = existsSync(hook) ? readFileSync(hook, "utf8") : undefined;
  let next: string;
  let action: HookSetup["action"];
  if (existing === undefined) {
    next = `#!/bin/sh\n${block}`;
    action = "created";
  } else if (existing.includes(BEGIN) && existing.includes(END)) {
    const start = existing.indexOf(BEGIN);
    const end = existing.indexOf(END) + END.length + 1;
    next = existing.slice(0, start) + block + existing.slice(end);
    action = next === existing ? "unchanged" : "updated";
  } else if (/^#!.*\b(sh|bash|zsh|dash|ksh)\b/.test(existing)) {
    const eol = existing.indexOf("\n") + 1;
    next = existing.slice(0, eol) + block + existing.slice(eol);
    action = "added";
  } else {
    throw new UsageError(
      `${hook} exists and is not a shell script: add this line to it yourself:\n  ${command}`,
    );
  }
  if (action !== "unchanged") {
    mkdirSync(dirname(hook), { recursive: true });
    const tmp = `${hook}.agent-chat-tmp`;
    writeFileSync(tmp, next, { mode: 0o755 });
    renameSync(tmp, hook);
  }
  chmodSync(hook, 0o755);
  return { hook, action, command };
}

function hookPath(dir: string): string {
  try {
    const path = execFileSync("git", ["rev-parse", "--git-path", "hooks/pre-commit"], {
      cwd: dir,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    }).trim();
    return isAbsolute(path) ? path : join(dir, path);
  } catch (err) {
    throw new UsageError(
      `${dir} is not a git repository (${(err as Error).message.split("\n")[0]})`,
    );
  }
}

/** The hook's line: the root resolved now (the commit may run with another environment). */
function guardCommand(
  ctx: CliContext,
  channels: string | undefined,
  opts: { as?: string; command?: string },
): string {
  // A URL root may carry credentials: it is left to the environment the commit runs in.
  const parts = [opts.command ?? "agent-chat"];
  const root = ctx.rootSpec;
  if (root.kind === "folder") parts.push("--root", quote(root.path));
  parts.push("guard");
  if (channels !== undefined) parts.push(quote(channels));
  if (opts.as !== undefined) parts.push("--as", quote(opts.as));
  return parts.join(" ");
}

function quote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`;
}
