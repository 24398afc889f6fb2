import { join } from "node:path";
import { readOwnTextSync, replaceFile } from "../../../fsutil/root-files.js";
import { recordFolder } from "./files.js";
import type { ReferenceClaim } from "./records.js";
import { TASKS_DIR } from "./records.js";

/**
 * What ours adds to a chat.py task lease, which chat.py's record has no field for: the fencing
 * token (per task, only growing), the lease's length (renewal by activity extends it by as
 * much) and the grants so far. Kept in `tasks/.<id>.lease`, a dot-file chat.py never lists.
 * A grant describes the live claim only while its holder and `claimed_at` are the claim's: a
 * claim chat.py made has no token of ours (and `fence` is never live for it).
 */
export interface Grants {
  token: number;
  holder?: string;
  claimedAt?: string;
  ttlMs?: number;
  history: { token: number; holder: string; at: number }[];
}

const MAX_GRANTS_BYTES = 64 * 1024;
const MAX_HISTORY = 20;
const MAX_NUMBER = 2 ** 50;

const count = (v: unknown) =>
  Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) < MAX_NUMBER
    ? (v as number)
    : undefined;

export function grantsFile(id: string): string {
  return `.${id}.lease`;
}

/** The grants of task `id` as stored; a missing or unsound file is token 0 (it is untrusted). */
export function readGrants(dir: string, id: string): Grants {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(
      readOwnTextSync(join(recordFolder(dir, TASKS_DIR), grantsFile(id)), MAX_GRANTS_BYTES),
    );
  } catch {
    return { token: 0, history: [] };
  }
  const token = count(v?.token) ?? 0;
  const grants: Grants = { token, history: [] };
  if (typeof v.holder === "string") grants.holder = v.holder;
  if (typeof v.claimedAt === "string") grants.claimedAt = v.claimedAt;
  const ttlMs = count(v.ttlMs);
  if (ttlMs) grants.ttlMs = ttlMs;
  if (Array.isArray(v.history)) {
    for (const g of v.history.slice(-MAX_HISTORY)) {
      const t = count(g?.token);
      const at = count(g?.at);
      if (t !== undefined && at !== undefined && typeof g.holder === "string") {
        grants.history.push({ token: t, holder: g.holder, at });
      }
    }
  }
  return grants;
}

/** The token of the live claim when we granted it; undefined for a grant of chat.py's. */
export function liveToken(grants: Grants, claim: ReferenceClaim | undefined): number | undefined {
  return claim && grants.holder === claim.owner && grants.claimedAt === claim.claimed_at
    ? grants.token
    : undefined;
}

/** Records a new grant of ours: the next token. */
export function nextGrant(
  grants: Grants,
  claim: ReferenceClaim,
  ttlMs: number,
  now: number,
): Grants {
  const token = grants.token + 1;
  const history = [...grants.history, { token, holder: claim.owner, at: now }].slice(-MAX_HISTORY);
  return { token, holder: claim.owner, claimedAt: claim.claimed_at, ttlMs, history };
}

export async function writeGrants(dir: string, id: string, grants: Grants): Promise<void> {
  await replaceFile(recordFolder(dir, TASKS_DIR), grantsFile(id), `${JSON.stringify(grants)}\n`);
}
