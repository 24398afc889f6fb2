import type { Command } from "commander";
import { isAgentChatError, referenceError } from "../../core/errors.js";
import {
  canonicalPath,
  lockedPath,
  normalizePattern,
  patternsOverlap,
  recordId,
} from "../../store/records/index.js";
import type { PathLeaseInfo, Store } from "../../store/types.js";
import { type CliContext, speaksReference07 } from "../context.js";
import { parseReferenceLease } from "../usage.js";

/**
 * chat.py 0.7's path-lock grammar (`lock|check|unlock|recover`, docs/leases.md) on our path
 * leases: each locked path is an exclusive lease of ours, which the folder store also writes as
 * chat.py's `locks/agent-chat-<token>.json`, and chat.py's own locks are honoured as leases of
 * their owners. Its error code leads each refusal, and each exits as chat.py's (1).
 */
export function registerPathLockCommands(program: Command, ctx: CliContext): void {
  registerLock(program, ctx);
  registerCheck(program, ctx);
  registerUnlock(program, ctx);
  registerRecover(program, ctx);
}

interface OwnerFlags {
  as?: string;
  from?: string;
  owner?: string;
  ttl?: string;
  leaseSeconds?: string;
  lease?: string;
  reason?: string;
}

/** `--as`, and chat.py's `--from` and `--owner` for it. */
function withOwner(command: Command, what: string): Command {
  return command
    .option("--as <name>", `${what} (default: $AGENT_CHAT_NAME)`)
    .option("--from <name>", "chat.py's name for --as")
    .option("--owner <name>", "chat.py's other name for --as");
}

/** `--ttl`, and chat.py's `--lease-seconds` and `--lease` (default 300 s, as chat.py's). */
function withTtl(command: Command): Command {
  return command
    .option("--ttl <duration>", "the lock: seconds (300, 0.5) or 90s, 30m, 2h (default 300 s)")
    .option("--lease-seconds <seconds>", "chat.py's name for --ttl")
    .option("--lease <seconds>", "chat.py's other name for --ttl");
}

/** What tells one path-lock command's registration from another's. */
interface LockCommand {
  name: string;
  description: string;
  /** The argument after `<channel>`: the paths, or the lock a command acts on. */
  subject: [string, string];
  /** How `--as` is described: the part this name plays. */
  owner: string;
  /** A required `--reason`, described so. */
  reason?: string;
  /** Whether the command takes a lease length (`--ttl` and chat.py's names for it). */
  ttl?: boolean;
  help: string;
}

/** `<channel> <subject>`, the owner flags, a ttl when it has one, and its help: the shared part. */
function lockCommand(program: Command, ctx: CliContext, spec: LockCommand): Command {
  let command = program
    .command(spec.name)
    .description(spec.description)
    .argument("<channel>")
    .argument(...spec.subject);
  if (spec.reason !== undefined) command = command.requiredOption("--reason <text>", spec.reason);
  command = withOwner(command, spec.owner);
  if (spec.ttl) command = withTtl(command);
  speaksReference07(command, ctx);
  return command.addHelpText("after", spec.help);
}

/** The acting name: `--as`, chat.py's `--from` or `--owner`, else $AGENT_CHAT_NAME. */
function ownerOf(ctx: CliContext, o: OwnerFlags): string {
  return ctx.agent(o.as ?? o.from ?? o.owner);
}

/** The lock's length, refused as chat.py refuses it (`PATH_LOCK_INVALID_DURATION`, exit 1). */
function ttlMs(o: OwnerFlags): number {
  const value = o.ttl ?? o.leaseSeconds ?? o.lease ?? "300";
  const flag = o.ttl !== undefined ? "--ttl" : "--lease-seconds";
  return parseReferenceLease({ value, flag, code: "PATH_LOCK_INVALID_DURATION", noun: "lock" });
}

/** chat.py's spelling of a path (`./src//a` is `src/a`; `.` the whole channel) as a lease pattern. */
function pattern(path: string): string {
  return canonicalPath(path.trim()) || "**";
}

/** The id chat.py knows a lease by: its lock id, or the record we keep for it. */
export function lockId(l: PathLeaseInfo): string {
  return l.lock ?? recordId(l);
}

/** chat.py's code for each refusal of ours a path-lock command can meet. */
const REFERENCE_CODE: Partial<Record<string, string>> = {
  CLAIM_LOST: "PATH_LOCK_CONFLICT",
  NOT_HOLDER: "PATH_LOCK_OWNER_MISMATCH",
  INVALID_ARGUMENT: "PATH_LOCK_INVALID_PATH",
  NOT_FOUND: "PATH_LOCK_NOT_FOUND",
  NOT_A_MEMBER: "PATH_LOCK_INVALID_OWNER",
  UNSAFE_FILE: "PATH_LOCK_STORAGE_INVALID",
};

/**
 * Runs `fn`; a refusal that is not already one of chat.py's path-lock errors (its reference) is
 * made one: chat.py's code for it as its reference, leading its message.
 */
async function asPathLock<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!isAgentChatError(err) || err.reference?.startsWith("PATH_LOCK_")) throw err;
    throw referenceError(
      err.code,
      REFERENCE_CODE[err.code] ?? "PATH_LOCK_STORAGE_ERROR",
      err.message,
    );
  }
}

function registerLock(program: Command, ctx: CliContext): void {
  lockCommand(program, ctx, {
    name: "lock",
    description: "lock paths as chat.py 0.7 does: exclusive leases both CLIs honour",
    subject: ["<paths...>", "workspace-relative paths (a folder covers what is under it)"],
    owner: "who locks",
    ttl: true,
    help:
      "\nAll paths or none: refused (exit 1, PATH_LOCK_CONFLICT) over another's lock or lease.\n" +
      "\nExample:\n  agent-chat lock review src/store docs/leases.md --as bob --lease-seconds 600",
  }).action(async (channel: string, paths: string[], opts: OwnerFlags) => {
    const owner = ownerOf(ctx, opts);
    const store = await ctx.open();
    // One lock, as chat.py's: every path or none, one record, one id `unlock` frees all by.
    const [first, ...rest] = paths.map(pattern);
    const lock = await asPathLock(async () => {
      await refuseOverlapWithin([first as string, ...rest]);
      return store.addPathLease(channel, first as string, owner, {
        ttlMs: ttlMs(opts),
        also: rest,
        alone: true,
      });
    });
    const locks = await members(store, channel, lock);
    // A folder store posts `path.locked` itself, journaled with the record it writes.
    if (ctx.rootSpec.kind !== "folder")
      await audit(store, "path.locked", lock, owner, undefined, locks);
    if (ctx.json) return ctx.printJson({ channel, owner, locks });
    const normalized = await Promise.all(
      locks.map(async (l) => (await lockedPath(l.pattern)).normalized_path),
    );
    ctx.out(`locked ${lockId(lock)} -> ${channel}/${normalized.join(", ")}\n`);
  });
}

/** chat.py refuses one lock request whose paths overlap one another (`src` and `src/a`). */
async function refuseOverlapWithin(patterns: string[]): Promise<void> {
  for (const [i, a] of patterns.entries()) {
    for (const b of patterns.slice(i + 1)) {
      if (await patternsOverlap(await normalizePattern(a), await normalizePattern(b))) {
        throw referenceError(
          "CLAIM_LOST",
          "PATH_LOCK_CONFLICT",
          "requested paths overlap within one lock request",
        );
      }
    }
  }
}

/** The leases of one lock of ours (its group, else itself), in the order they were granted. */
async function members(
  store: Store,
  channel: string,
  lease: PathLeaseInfo,
): Promise<PathLeaseInfo[]> {
  if (lease.lock !== undefined) return [lease];
  const id = lockId(lease);
  const all = (await store.pathLeases(channel)).filter((l) => !l.lock && lockId(l) === id);
  return all.length > 0 ? all.sort((a, b) => a.token - b.token) : [lease];
}

function registerCheck(program: Command, ctx: CliContext): void {
  lockCommand(program, ctx, {
    name: "check",
    description: "list the locks and leases over paths, as chat.py's check (exit 0 either way)",
    subject: ["<paths...>", "workspace-relative paths"],
    owner: "who asks (accepted, as chat.py's; every holder is listed)",
    help:
      "\nPrints `available`, or one `locked <id> owner=<who> expires=<when>` line per lock.\n" +
      "\nExample:\n  agent-chat check review src/store --as carol",
  }).action(async (channel: string, paths: string[]) => {
    const store = await ctx.open();
    if (ctx.rootSpec.kind === "folder") {
      const folder = await ctx.openWith(
        "chatpy07",
        "check: this folder store cannot tell whether a path-lock change is pending",
      );
      await folder.chatpy07.refuseWhilePathLocksPending(channel);
    }
    const locks = await asPathLock(async () => {
      // chat.py refuses a path outside the workspace here too, rather than call it free.
      const patterns = await Promise.all(paths.map((p) => normalizePattern(pattern(p))));
      return overlapping(store, channel, patterns);
    });
    if (ctx.json) return ctx.printJson({ channel, available: locks.length === 0, locks });
    if (locks.length === 0) return ctx.out("available\n");
    for (const l of locks) {
      ctx.out(
        `locked ${lockId(l)} owner=${l.owner ?? l.holder} expires=${referenceTime(l.expiresAt)}\n`,
      );
    }
  });
}

/** chat.py's spelling of a time: an offset, microseconds. */
function referenceTime(iso: string): string {
  return iso.replace(/\.(\d{3})Z$/, ".$1000+00:00");
}

/** The channel's leases over any of `patterns`, one per lock id (a chat.py lock has many paths). */
async function overlapping(
  store: Store,
  channel: string,
  patterns: string[],
): Promise<PathLeaseInfo[]> {
  const byId = new Map<string, PathLeaseInfo>();
  for (const l of await leasesByLock(store, channel)) {
    if (byId.has(lockId(l))) continue;
    for (const p of patterns) {
      if (await patternsOverlap(p, l.pattern)) {
        byId.set(lockId(l), l);
        break;
      }
    }
  }
  return [...byId.values()];
}

/**
 * The channel's leases, chat.py's locks first: a record of ours that chat.py took over with its
 * `recover` keeps our id, and is then chat.py's lock, not the expired lease we had.
 */
async function leasesByLock(store: Store, channel: string): Promise<PathLeaseInfo[]> {
  const leases = await store.pathLeases(channel);
  return [...leases.filter((l) => l.lock), ...leases.filter((l) => !l.lock)];
}

/** The lease `target` names: a lock id, one of our tokens, or its exact path. */
async function find(store: Store, channel: string, target: string): Promise<PathLeaseInfo> {
  const leases = await leasesByLock(store, channel);
  const want = pattern(target);
  const hits = leases.filter(
    (l) => lockId(l) === target || String(l.token) === target || l.pattern === want,
  );
  const ids = new Set(hits.map(lockId));
  if (ids.size > 1) {
    throw referenceError(
      "INVALID_ARGUMENT",
      "PATH_LOCK_CONFLICT",
      `${target} matches several locks: ${[...ids].join(", ")}`,
    );
  }
  const hit = hits[0];
  if (!hit) throw referenceError("NOT_FOUND", "PATH_LOCK_NOT_FOUND", `no lock ${target}`);
  return hit;
}

/** The lock unlock and recover act on. */
const LOCK_TARGET: [string, string] = [
  "<target>",
  "lock id (agent-chat-4), token (4) or the exact locked path",
];

function registerUnlock(program: Command, ctx: CliContext): void {
  lockCommand(program, ctx, {
    name: "unlock",
    description: "release your lock (its id, its token or its exact path)",
    subject: LOCK_TARGET,
    owner: "the holder",
    help: "\nExample:\n  agent-chat unlock review src/store --as bob",
  }).action(async (channel: string, target: string, opts: OwnerFlags) => {
    const owner = ownerOf(ctx, opts);
    const store = await ctx.open();
    const released = await asPathLock(async () => {
      const l = await find(store, channel, target);
      // A lock chat.py made is changed as chat.py changes it, its journal and audit message too.
      if (l.lock)
        return (await store.changePathLock(channel, l.lock, { op: "unlock", agent: owner })).after;
      const all = await members(store, channel, l);
      const lease = await store.releasePathLease(channel, String(l.token), owner, {
        token: l.token,
      });
      // A folder store posts `path.lock.unlocked` itself, journaled with the record it removes.
      if (ctx.rootSpec.kind !== "folder") {
        await audit(store, "path.lock.unlocked", lease, owner, undefined, all);
      }
      return lease;
    });
    if (ctx.json) return ctx.printJson(released);
    ctx.out(`unlocked ${lockId(released)} from ${channel}\n`);
  });
}

function registerRecover(program: Command, ctx: CliContext): void {
  lockCommand(program, ctx, {
    name: "recover",
    description: "take over an expired lock, saying why (refused while it is live)",
    subject: LOCK_TARGET,
    reason: "why it is taken over (kept with the new lease)",
    owner: "who takes it over",
    ttl: true,
    help:
      "\nThe lock is yours once the 5 s clock-skew grace past its end is over.\n" +
      "\nExample:\n  agent-chat recover review src/store --as carol --reason 'bob is gone'",
  }).action(async (channel: string, target: string, opts: OwnerFlags) => {
    const owner = ownerOf(ctx, opts);
    const reason = (opts.reason ?? "").trim();
    if (!reason) {
      throw referenceError("INVALID_ARGUMENT", "PATH_LOCK_INVALID_REASON", "--reason is empty");
    }
    const store = await ctx.open();
    const { previous, taken } = await asPathLock(() =>
      recoverLock(
        store,
        channel,
        target,
        owner,
        reason,
        ttlMs(opts),
        ctx.rootSpec.kind === "folder",
      ),
    );
    if (ctx.json) return ctx.printJson({ ...taken, previous });
    ctx.out(
      `recovered ${lockId(taken)} for ${owner} previous_owner=${previous.owner ?? previous.holder} reason=${reason}\n`,
    );
  });
}

async function recoverLock(
  store: Store,
  channel: string,
  target: string,
  owner: string,
  reason: string,
  ms: number,
  folder: boolean,
): Promise<{ previous: PathLeaseInfo; taken: PathLeaseInfo }> {
  const previous = await find(store, channel, target);
  const change = { op: "recover" as const, agent: owner, reason, ttlMs: ms };
  if (previous.lock) {
    const { before, after } = await store.changePathLock(channel, previous.lock, change);
    return { previous: before, taken: after };
  }
  // In a folder root our exclusive lease has its record: that record changes hands, as chat.py's.
  const handedOver = previous.exclusive
    ? await store.changePathLock(channel, lockId(previous), change).catch((err: unknown) => {
        if (isAgentChatError(err, "NOT_FOUND")) return undefined;
        throw err;
      })
    : undefined;
  if (handedOver) return { previous, taken: handedOver.after };
  if (previous.state === "live") {
    throw referenceError(
      "CLAIM_LOST",
      "PATH_LOCK_NOT_STALE",
      `lock ${lockId(previous)} of ${previous.owner ?? previous.holder} is live until ${previous.expiresAt}`,
    );
  }
  const why = `recovered from ${previous.owner ?? previous.holder} (lease ended ${previous.expiresAt}): ${reason}`;
  const taken = await store.addPathLease(channel, previous.pattern, owner, {
    ttlMs: ms,
    reason: why,
  });
  // A folder store posted `path.locked` for the new record: chat.py never saw the lease it ends.
  if (!folder) await audit(store, "path.lock.recovered", taken, owner, { previous, reason });
  return { previous, taken };
}

/**
 * The `status: <event>` message chat.py posts for a change of a lock (`path.locked`,
 * `path.lock.unlocked`, `path.lock.recovered`), with its JSON body, for a lock that is a lease
 * of ours in a store that keeps no lock records (NATS). Posted once the change is made; a folder
 * store posts it itself, journaled with the record (reference07/lock-changes.ts).
 */
export async function audit(
  store: Store,
  event: string,
  lease: PathLeaseInfo,
  actor: string,
  recovery?: { previous: PathLeaseInfo; reason: string },
  /** Every lease of the lock (chat.py's `lock CH a b`); else the lease alone. */
  group: PathLeaseInfo[] = [lease],
): Promise<void> {
  const expires = referenceTime(lease.expiresAt);
  const body: Record<string, unknown> = {
    channel: lease.channel,
    event,
    expires_at: expires,
    lease_expires_at: expires,
    lock_id: lockId(lease),
    owner: lease.owner ?? lease.holder,
    paths: await Promise.all(group.map((l) => lockedPath(l.pattern))),
  };
  if (recovery) {
    const previousEnd = referenceTime(recovery.previous.expiresAt);
    body.previous_expires_at = previousEnd;
    body.previous_lease_expires_at = previousEnd;
    body.previous_owner = recovery.previous.owner ?? recovery.previous.holder;
    body.recovery_reason = recovery.reason;
  }
  body.updated_at = referenceTime(new Date().toISOString());
  await store.post(lease.channel, {
    from: actor,
    to: "all",
    title: `${event} ${lockId(lease)}`,
    status: event,
    body: JSON.stringify(body, null, 2),
  });
}
