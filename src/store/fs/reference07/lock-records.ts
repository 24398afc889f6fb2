import type { LockedPath } from "../../records/index.js";
import { parseTime, REFERENCE_ID } from "./records.js";

/**
 * chat.py 0.7's path lock record (`CH/locks/<lock_id>.json`) checked as chat.py checks it, for
 * what must take a record as it is or not at all: the summary (`state`) and the recovery of a
 * path-lock change that died half-way.
 */

/** One path lock record as chat.py writes it (and its `state --json` prints it). */
export interface LockRecord {
  lock_id: string;
  channel: string;
  owner: string;
  paths: LockedPath[];
  expires_at: string;
  locked_at: string;
  updated_at: string;
  previous_owner: string | null;
  previous_expires_at: string | null;
  recovery_reason: string | null;
}

const LOCK_FIELDS = [
  "lock_id",
  "channel",
  "owner",
  "paths",
  "expires_at",
  "locked_at",
  "updated_at",
  "previous_owner",
  "previous_expires_at",
  "recovery_reason",
];

function lockPath(value: unknown): LockRecord["paths"][number] {
  const p = value as Record<string, unknown>;
  const ok =
    p !== null &&
    typeof p === "object" &&
    typeof p.normalized_path === "string" &&
    typeof p.display_path === "string" &&
    (p.kind === "file" || p.kind === "directory") &&
    p.normalized_path !== "" &&
    !p.normalized_path.startsWith("/") &&
    !p.normalized_path.split("/").includes("..");
  if (!ok) throw new Error("a path is not chat.py's {normalized_path, display_path, kind}");
  return {
    normalized_path: p.normalized_path as string,
    display_path: p.display_path as string,
    kind: p.kind as LockedPath["kind"],
  };
}

/** One `locks/<id>.json`, validated as chat.py validates it; throws with the reason. */
export function parseLock(name: string, text: string, channel: string): LockRecord {
  const v = JSON.parse(text) as Record<string, unknown>;
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error("not an object");
  const unknown = Object.keys(v).filter((k) => !LOCK_FIELDS.includes(k));
  if (unknown.length > 0) throw new Error(`unknown fields: ${unknown.join(", ")}`);
  const nullable = (k: string) => (v[k] === undefined || v[k] === null ? null : String(v[k]));
  for (const k of ["lock_id", "owner"]) {
    if (typeof v[k] !== "string" || !REFERENCE_ID.test(v[k] as string)) throw new Error(`bad ${k}`);
  }
  for (const k of ["expires_at", "locked_at", "updated_at"]) {
    parseTime(v[k], k, "PATH_LOCK_INVALID_TIMESTAMP");
  }
  if (v.channel !== channel) throw new Error(`lock channel ${String(v.channel)} is not ${channel}`);
  if (name !== `${v.lock_id}.json`) throw new Error("lock id does not match its file name");
  if (!Array.isArray(v.paths) || v.paths.length === 0) throw new Error("no paths");
  return {
    lock_id: v.lock_id as string,
    channel,
    owner: v.owner as string,
    paths: v.paths.map(lockPath),
    expires_at: v.expires_at as string,
    locked_at: v.locked_at as string,
    updated_at: v.updated_at as string,
    previous_owner: nullable("previous_owner"),
    previous_expires_at: nullable("previous_expires_at"),
    recovery_reason: nullable("recovery_reason"),
  };
}

/** A locked path as a lease pattern: chat.py's `.` (the whole workspace) is every path. */
export function leasePattern(normalizedPath: string): string {
  return normalizedPath === "." ? "**" : normalizedPath;
}
