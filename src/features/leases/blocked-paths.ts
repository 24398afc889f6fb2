import { coverage, underOrAt } from "../../store/records/index.js";

/*
 * The git guard's question (`agent-chat guard`): which of the paths a commit stages do other
 * agents' live exclusive leases cover.
 */

/** A live exclusive lease of another agent that covers a path, as the git guard reports it. */
export interface Blocked {
  path: string;
  lease: {
    token: number;
    pattern: string;
    holder: string;
    expiresAt: string;
    reason?: string;
    lock?: string;
  };
}

/** What the guard found: the blocked paths, and how many it had no time left to look at. */
export interface GuardScan {
  blocked: Blocked[];
  unchecked: number;
}

/** When a check stops: once `now()` reaches `until`. */
export interface TimeLimit {
  until: number;
  now: () => number;
}

/**
 * The paths that live exclusive leases of agents other than `me` cover (each with the first
 * such lease): what a commit of `paths` by `me` would step on. Shared and expired leases, and
 * `me`'s own, never block. Each match takes linear time, but a commit may stage many paths
 * and a channel hold many leases: given a `limit`, the paths left when it is reached are
 * counted, not checked.
 */
export async function blockedPaths(
  leases: ReadonlyArray<Blocked["lease"] & { exclusive: boolean; state: string }>,
  paths: readonly string[],
  me: string,
  limit?: TimeLimit,
): Promise<GuardScan> {
  const others = leases.filter((l) => l.exclusive && l.state === "live" && l.holder !== me);
  const compiled = await Promise.all(
    others.map(async (l) => [l, await coverage(l.pattern)] as const),
  );
  const blocked: Blocked[] = [];
  for (const [i, path] of paths.entries()) {
    if (limit && limit.now() >= limit.until) return { blocked, unchecked: paths.length - i };
    const hit = compiled.find(([, glob]) => underOrAt(path, glob.base) && glob.covers(path));
    if (hit) blocked.push({ path, lease: hit[0] });
  }
  return { blocked, unchecked: 0 };
}
