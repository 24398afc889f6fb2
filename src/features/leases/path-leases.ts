import { AgentChatError, referenceError } from "../../core/errors.js";
import { oneLine } from "../../core/message.js";
import { identity, validateName } from "../../core/names.js";
import {
  MAX_PATH_LEASES,
  MAX_REASON,
  normalizePattern,
  ownedBy,
  type PathLease,
  type PathLeaseDoc,
  type PathLeaseRecord,
  patternsOverlap,
} from "../../store/records/index.js";
import { pastGrace, refuseNotHolder } from "../../store/shared/index.js";
import type {
  PathLeaseInfo,
  PathLeaseOptions,
  ReleaseOptions,
  RenewOptions,
} from "../../store/types.js";

/**
 * Path leases (`lease add CH 'src/**'`): the rules, written once above the backends. A backend
 * keeps one document per channel (the folder store: `CH/.leases.json`, a name chat.py ignores;
 * NATS: one KV key) and offers a read and a compare-and-swap write of it ({@link
 * PathLeaseStorage}); every change here is a read, a decision and a swap, under the channel's
 * lock where the backend has one, retried when the document changed in between.
 */

/** What a backend provides. */
export interface PathLeaseStorage {
  read(channel: string): Promise<PathLeaseRecord>;
  /** Stores `doc` unless the document is no longer at `current.version`; false then. */
  swap(channel: string, current: PathLeaseRecord, doc: PathLeaseDoc): Promise<boolean>;
  exclusive<T>(channel: string, fn: () => Promise<T>): Promise<T>;
  /**
   * Reservations another implementation keeps in the channel (the folder store: chat.py 0.7's
   * `locks/*.json`), honoured as exclusive leases of their owners; read under `exclusive`.
   */
  foreign(channel: string): Promise<PathLease[]>;
  /**
   * Whether each exclusive lease is also a lock record another implementation reads (the folder
   * store: chat.py 0.7's `locks/`), which must never hold two live records over one path.
   */
  recordsLocks: boolean;
  /** The channel's default lease (its `task_ttl`, else 30 minutes); validates the channel. */
  channelTtl(channel: string): Promise<number>;
  now(): number;
}

/** An expired lease is still listed (who held what, until when) for a day. */
const KEEP_EXPIRED_MS = 24 * 3_600_000;
/** The most paths one lock (one `lease add` with `also`) covers. */
const MAX_GROUP = 100;
/** How often activity looks for leases to renew when none of the holder's is due sooner. */
const LOOK_MS = 30_000;

/** Whether the lease still reserves its paths at `now`: until its end and the skew grace. */
export function pathLeaseLive(lease: PathLease, now: number): boolean {
  return !pastGrace(lease.expiresAt, now);
}

export function pathLeaseInfo(channel: string, lease: PathLease, now: number): PathLeaseInfo {
  const info: PathLeaseInfo = {
    token: lease.token,
    channel,
    pattern: lease.pattern,
    holder: lease.holder,
    exclusive: lease.exclusive,
    state: pathLeaseLive(lease, now) ? "live" : "expired",
    grantedAt: new Date(lease.at).toISOString(),
    expiresAt: new Date(lease.expiresAt).toISOString(),
  };
  if (lease.reason !== undefined) info.reason = lease.reason;
  if (lease.forced !== undefined) info.forced = lease.forced;
  if (lease.lock !== undefined) info.lock = lease.lock;
  if (lease.group !== undefined) info.group = lease.group;
  if (lease.owner !== undefined) info.owner = lease.owner;
  return info;
}

/** `bob holds src/** (exclusive, token 3, until 2026-…)`. */
export function describePathLease(lease: PathLease | PathLeaseInfo): string {
  const until =
    typeof lease.expiresAt === "number" ? new Date(lease.expiresAt).toISOString() : lease.expiresAt;
  if (lease.lock !== undefined) {
    return `${lease.holder} holds ${lease.pattern} (chat.py path lock ${lease.lock}, until ${until})`;
  }
  return (
    `${lease.holder} holds ${lease.pattern} (${lease.exclusive ? "exclusive" : "shared"}, ` +
    `token ${lease.token}, until ${until}${lease.reason ? `: ${lease.reason}` : ""})`
  );
}

/** Every lease of `leases` described, `; ` between them. */
function describeAll(leases: PathLease[]): string {
  return leases.map(describePathLease).join("; ");
}

/**
 * The leases of `doc` worth keeping at `now`: expired ones go after a day, but one with a lock
 * record chat.py reads stays, as its record does, until it is released or recovered (a record
 * that vanished with no message would be a silent change of chat.py's locks).
 */
function pruned(doc: PathLeaseDoc, now: number): PathLease[] {
  return doc.leases.filter((l) => l.recorded === true || now - l.expiresAt < KEEP_EXPIRED_MS);
}

/** The rules of path leases over a backend's {@link PathLeaseStorage}. */
export class PathLeaseBook {
  /** When activity should next look at a holder's leases in a channel (`channel\nholder`). */
  private readonly nextLook = new Map<string, number>();

  constructor(private readonly storage: PathLeaseStorage) {}

  async list(channel: string): Promise<PathLeaseInfo[]> {
    await this.storage.channelTtl(channel);
    const { doc } = await this.storage.read(channel);
    const foreign = await this.storage.foreign(channel);
    const now = this.storage.now();
    return [...pruned(doc, now).sort((a, b) => a.token - b.token), ...foreign].map((l) =>
      pathLeaseInfo(channel, l, now),
    );
  }

  async add(
    channel: string,
    given: string,
    agent: string,
    options: PathLeaseOptions = {},
  ): Promise<PathLeaseInfo> {
    validateName("agent", agent);
    const patterns: string[] = [];
    for (const p of [given, ...(options.also ?? [])]) {
      const pattern = await normalizePattern(p);
      if (!patterns.includes(pattern)) patterns.push(pattern);
    }
    if (patterns.length > MAX_GROUP) {
      throw new AgentChatError("INVALID_ARGUMENT", `one lock covers at most ${MAX_GROUP} paths`);
    }
    const channelTtl = await this.storage.channelTtl(channel);
    const ttlMs = options.ttlMs ?? channelTtl;
    const holder = identity(agent);
    const owner = agent.trim();
    const exclusive = options.shared !== true;
    this.nextLook.delete(`${channel}\n${holder}`);
    const overlaps = patterns.map(overlapsOf);
    // chat.py's `lock`: refused over any live lock, its owner's own too (never two records).
    const against = options.alone === true ? { holder: "", owner: "" } : { holder, owner };
    // Matched before the channel lock, against the leases there now: under it, only a lease
    // granted in between is matched, so the channel's writers never wait on our matching.
    const before = await this.contenders(channel);
    for (const o of overlaps) {
      await this.conflicts(before, o, against.holder, against.owner, exclusive);
    }
    return this.changeOne(channel, async (doc, now) => {
      let leases = pruned(doc, now);
      const theirs = await this.storage.foreign(channel);
      let token = doc.token;
      let group: number | undefined;
      const granted: PathLease[] = [];
      for (const [i, pattern] of patterns.entries()) {
        const mine = leases.find(
          (l) =>
            options.alone !== true &&
            ownedBy(l, holder, owner) &&
            l.pattern === pattern &&
            pathLeaseLive(l, now),
        );
        const conflicts = await this.conflicts(
          [...leases, ...theirs],
          overlaps[i] as (other: string) => Promise<boolean>,
          against.holder,
          against.owner,
          exclusive,
          now,
        );
        this.refuseConflicts(pattern, exclusive, conflicts, options.force === true);
        const others = leases.filter((l) => l !== mine);
        if (others.length >= MAX_PATH_LEASES) {
          throw new AgentChatError(
            "INVALID_ARGUMENT",
            `${channel} holds ${MAX_PATH_LEASES} path leases already; release some first`,
          );
        }
        const next = mine?.token ?? ++token;
        if (patterns.length > 1) group ??= next;
        const lease = grant(
          { token: next, pattern, holder, owner, exclusive, at: mine?.at ?? now, ttlMs },
          now,
          group,
          options.reason,
          conflicts,
        );
        leases = [...others, lease];
        granted.push(lease);
      }
      return { doc: { token: Math.max(doc.token, token), leases }, lease: granted[0] };
    });
  }

  /**
   * Refuses a lease of `pattern` over `conflicts` unless forced; and forced too where both would
   * be lock records chat.py reads: two live records of one path leave its `unlock <path>`
   * failing ("matches multiple") and its `check` naming two holders.
   */
  private refuseConflicts(
    pattern: string,
    exclusive: boolean,
    conflicts: PathLease[],
    force: boolean,
  ): void {
    if (conflicts.length === 0) return;
    const recorded = conflicts.filter((c) => c.exclusive);
    const forceRefused = this.storage.recordsLocks && exclusive && recorded.length > 0;
    if (!force) {
      const orForce = forceRefused ? "" : ", or add --force to record yours anyway";
      throw new AgentChatError(
        "CLAIM_LOST",
        `cannot lease ${pattern}: ${describeAll(conflicts)} (wait for it, ask its holder${orForce})`,
      );
    }
    if (forceRefused) {
      throw referenceError(
        "CLAIM_LOST",
        "PATH_LOCK_CONFLICT",
        `cannot lease ${pattern}, not even with --force: ` +
          `${describeAll(recorded)}, and two live lock records of one path are what chat.py's ` +
          "unlock refuses (wait for it, or recover it once it has ended)",
      );
    }
  }

  async renew(
    channel: string,
    target: string,
    agent: string,
    options: RenewOptions = {},
  ): Promise<PathLeaseInfo> {
    const fallback = await this.storage.channelTtl(channel);
    return this.asHolder(channel, target, agent, "renew", options.token, (doc, lease, now) => {
      const ttlMs = options.ttlMs ?? lease.ttlMs ?? fallback;
      const next = { ...lease, expiresAt: now + ttlMs, ttlMs };
      return {
        doc: { ...doc, leases: doc.leases.map((l) => (l === lease ? next : l)) },
        lease: next,
      };
    });
  }

  async release(
    channel: string,
    target: string,
    agent: string,
    options: ReleaseOptions = {},
  ): Promise<PathLeaseInfo> {
    await this.storage.channelTtl(channel);
    return this.asHolder(
      channel,
      target,
      agent,
      "release",
      options.token,
      // A lease granted in one lock with others ends with them: their one record goes at once.
      (doc, lease) => ({
        doc: {
          ...doc,
          leases: doc.leases.filter(
            (l) =>
              l !== lease &&
              !(lease.group !== undefined && l.group === lease.group && l.holder === lease.holder),
          ),
        },
        lease,
      }),
      "released",
    );
  }

  /**
   * Renewal by activity: the holder's post, read or wait in the channel extends each of its
   * live path leases with less than two thirds of its length left, by that length from now.
   * It looks at most every 30 s (sooner when one of its leases is due sooner) and never fails
   * the operation it rides on.
   */
  async keepAlive(channel: string, agent: string): Promise<void> {
    try {
      const holder = identity(agent);
      const owner = agent.trim();
      const key = `${channel}\n${holder}`;
      const now = this.storage.now();
      if (now < (this.nextLook.get(key) ?? Number.NEGATIVE_INFINITY)) return;
      const { doc } = await this.storage.read(channel);
      const mine = doc.leases.filter((l) => ownedBy(l, holder, owner) && pathLeaseLive(l, now));
      this.nextLook.set(key, Math.min(now + LOOK_MS, ...mine.map(dueAt)));
      if (!mine.some((l) => now >= dueAt(l))) return;
      await this.change(channel, async (current, at) => {
        const leases = current.leases.map((l) =>
          ownedBy(l, holder, owner) && pathLeaseLive(l, at) && at >= dueAt(l)
            ? { ...l, expiresAt: at + l.ttlMs }
            : l,
        );
        return { doc: { ...current, leases } };
      });
      this.nextLook.delete(key);
    } catch {
      // A courtesy of activity: the post, read or wait it rode on has succeeded.
    }
  }

  /** Live leases of others that a new lease of `holder` would overlap, as `overlaps` says. */
  private async conflicts(
    leases: PathLease[],
    overlaps: (pattern: string) => Promise<boolean>,
    holder: string,
    owner: string,
    exclusive: boolean,
    now = this.storage.now(),
  ): Promise<PathLease[]> {
    const out: PathLease[] = [];
    for (const l of leases) {
      if (ownedBy(l, holder, owner) || !pathLeaseLive(l, now)) continue;
      if (!exclusive && !l.exclusive) continue;
      if (await overlaps(l.pattern)) out.push(l);
    }
    return out;
  }

  /** The channel's leases and another implementation's, read without the lock. */
  private async contenders(channel: string): Promise<PathLease[]> {
    const { doc } = await this.storage.read(channel);
    return [...doc.leases, ...(await this.storage.foreign(channel))];
  }

  /**
   * Finds the lease `target` names (its token, or a pattern the agent holds) and applies a
   * change only its holder may make, while it is live and (given a token) with that token.
   */
  private async asHolder(
    channel: string,
    target: string,
    agent: string,
    verb: string,
    token: number | undefined,
    change: (doc: PathLeaseDoc, lease: PathLease, now: number) => Outcome,
    state?: PathLeaseInfo["state"],
  ): Promise<PathLeaseInfo> {
    validateName("agent", agent);
    if (token !== undefined && (!Number.isSafeInteger(token) || token <= 0)) {
      throw new AgentChatError("INVALID_ARGUMENT", `a token is a positive integer (got ${token})`);
    }
    const me = { holder: identity(agent), owner: agent.trim() };
    const pattern = /^\d+$/.test(target) ? undefined : await normalizePattern(target);
    return this.changeOne(
      channel,
      async (doc, now) => {
        const lease = findLease(doc, target, pattern, me, now);
        refuseUnlessHolder(lease, me, verb, token, now);
        return change(doc, lease, now);
      },
      state,
    );
  }

  /** Read, decide, swap; again when another writer changed the document in between. */
  private change(
    channel: string,
    decide: (doc: PathLeaseDoc, now: number) => Promise<Outcome>,
  ): Promise<{ lease?: PathLease; now: number }> {
    return this.storage.exclusive(channel, async () => {
      for (;;) {
        const current = await this.storage.read(channel);
        const now = this.storage.now();
        const { doc, lease } = await decide(current.doc, now);
        if (await this.storage.swap(channel, current, doc)) {
          return lease === undefined ? { now } : { lease, now };
        }
      }
    });
  }

  /** {@link change} for one lease, described as callers see it. */
  private async changeOne(
    channel: string,
    decide: (doc: PathLeaseDoc, now: number) => Promise<Outcome>,
    state?: PathLeaseInfo["state"],
  ): Promise<PathLeaseInfo> {
    const { lease, now } = await this.change(channel, decide);
    const info = pathLeaseInfo(channel, lease as PathLease, now);
    if (state !== undefined) info.state = state;
    return info;
  }
}

/** A new grant: the lease from `now` for its length, with its group, reason and forced ones. */
function grant(
  base: Omit<PathLease, "expiresAt">,
  now: number,
  group: number | undefined,
  reason: string | undefined,
  conflicts: PathLease[],
): PathLease {
  const lease: PathLease = { ...base, expiresAt: now + base.ttlMs };
  if (group !== undefined) lease.group = group;
  if (reason !== undefined) lease.reason = oneLine(reason).slice(0, MAX_REASON);
  if (conflicts.length > 0) lease.forced = conflicts.map(describePathLease);
  return lease;
}

/** Whether `pattern` overlaps another, each other pattern worked out once. */
function overlapsOf(pattern: string): (other: string) => Promise<boolean> {
  const known = new Map<string, Promise<boolean>>();
  return (other) => {
    let overlap = known.get(other);
    if (overlap === undefined) {
      overlap = patternsOverlap(pattern, other);
      known.set(other, overlap);
    }
    return overlap;
  };
}

interface Outcome {
  doc: PathLeaseDoc;
  lease?: PathLease;
}

/** When a live lease is due for renewal by activity: a third of its length has passed. */
function dueAt(lease: PathLease): number {
  return lease.expiresAt - (lease.ttlMs * 2) / 3;
}

/**
 * The lease `target` names: by token, any lease; by pattern, the agent's own (live first),
 * else another agent's live one (so that the refusal names its holder).
 */
function findLease(
  doc: PathLeaseDoc,
  target: string,
  pattern: string | undefined,
  me: Me,
  now: number,
): PathLease {
  const mine = (l: PathLease) => ownedBy(l, me.holder, me.owner);
  const found =
    pattern === undefined
      ? doc.leases.find((l) => l.token === Number(target))
      : (doc.leases.find((l) => l.pattern === pattern && mine(l) && pathLeaseLive(l, now)) ??
        doc.leases.find((l) => l.pattern === pattern && mine(l)) ??
        doc.leases.find((l) => l.pattern === pattern && pathLeaseLive(l, now)));
  if (!found) {
    throw new AgentChatError(
      "NOT_FOUND",
      `no path lease ${pattern === undefined ? `with token ${target}` : `on ${pattern}`}`,
    );
  }
  return found;
}

/** The acting agent: its key, and its name as given. */
interface Me {
  holder: string;
  owner: string;
}

function refuseUnlessHolder(
  lease: PathLease,
  me: Me,
  verb: string,
  token: number | undefined,
  now: number,
): void {
  refuseNotHolder(`path lease ${lease.token} on ${lease.pattern}`, [
    !ownedBy(lease, me.holder, me.owner) &&
      `is not yours: ${describePathLease(lease)}; only its holder can ${verb} it`,
    !pathLeaseLive(lease, now) &&
      `expired at ${new Date(lease.expiresAt).toISOString()}; lease the paths again`,
    token !== undefined &&
      token !== lease.token &&
      `is held with token ${lease.token}; token ${token} is stale`,
  ]);
}
