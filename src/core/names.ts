import { AgentChatError } from "./errors.js";

/**
 * Names of channels, agents and tasks become path segments, so one rule keeps them inside the
 * root: an ASCII letter or digit first, then letters, digits, `.`, `_` or `-`; at most
 * {@link MAX_NAME_LENGTH} characters; no Windows device names. That excludes `..`, separators,
 * absolute paths, drive letters, NUL and control characters, and leading `.`/`_` (which the SPEC
 * reserves for non-message files).
 */
export const MAX_NAME_LENGTH = 64;

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const TASK_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
const RESERVED = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$/i;

export type NameKind = "channel" | "agent" | "task";

function describe(value: string): string {
  const shown = value.length > 40 ? `${value.slice(0, 40)}…` : value;
  return JSON.stringify(shown);
}

export function validateName(kind: NameKind, value: unknown): string {
  if (typeof value !== "string" || value.length === 0) {
    throw new AgentChatError("INVALID_NAME", `${kind} name is required`);
  }
  if (value.length > MAX_NAME_LENGTH) {
    throw new AgentChatError(
      "INVALID_NAME",
      `${kind} name is too long (${value.length} characters; at most ${MAX_NAME_LENGTH})`,
    );
  }
  const pattern = kind === "task" ? TASK_ID_PATTERN : NAME_PATTERN;
  if (!pattern.test(value)) {
    const allowed =
      kind === "task"
        ? "letters, digits, '_' and '-', starting with a letter or digit"
        : "ASCII letters, digits, '.', '_' and '-', starting with a letter or digit";
    throw new AgentChatError(
      "INVALID_NAME",
      `invalid ${kind} name ${describe(value)}: use ${allowed}`,
    );
  }
  if (RESERVED.test(value)) {
    throw new AgentChatError(
      "INVALID_NAME",
      `invalid ${kind} name ${describe(value)}: reserved device name`,
    );
  }
  return value;
}

/** Whether `value` passes {@link validateName}: a name that may be shown as a name. */
export function isValidName(kind: NameKind, value: unknown): value is string {
  try {
    validateName(kind, value);
    return true;
  } catch {
    return false;
  }
}

/**
 * The reference's slug: lower-case; each run of characters outside [a-z0-9] becomes one `-`;
 * trim `-`; cut to 40 characters; trim `-` again; empty becomes `msg`.
 */
export function slug(text: string): string {
  const s = text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/^-+|-+$/g, "");
  return s === "" ? "msg" : s;
}

/**
 * An agent's key: the slug, because the reference names cursor files (`.cursors/<slug>.txt`) and
 * claim markers (`task-<id>.CLAIMED-<slug>.md`) by it; relevance uses it too, so that `Bob` and
 * `bob` (which the reference gives one cursor file but different relevance) are one agent.
 * Different names can share a key (`bob_x`, `bob-x`, `bob.x`, `alice.` and `alice`): the store
 * admits only one of them per channel (see {@link collidingName}), and who someone IS is decided
 * with {@link sameAgent}, never by the key.
 */
export function identity(agent: string): string {
  return slug(agent.trim());
}

/**
 * Whether two names are one agent: equal but for surrounding space and case (`Bob` is `bob`).
 * Punctuation counts: `alice.` is not `alice`, though both have the key `alice`.
 */
export function sameAgent(a: string, b: string): boolean {
  return a.trim().toLowerCase() === b.trim().toLowerCase();
}

/**
 * The first of `known` that is a different agent with the same key as `name`, if any: two such
 * names would share a cursor file, claim markers and relevance, so one may not act where the
 * other is known.
 */
export function collidingName(name: string, known: Iterable<string>): string | undefined {
  const key = identity(name);
  for (const other of known) {
    if (identity(other) === key && !sameAgent(other, name)) return other;
  }
  return undefined;
}

/** Refuses a list of names (a channel's members) in which two different agents share a key. */
export function assertDistinctAgents(names: readonly string[], what: string): void {
  names.forEach((name, i) => {
    const other = collidingName(name, names.slice(0, i));
    if (other !== undefined) {
      throw new AgentChatError(
        "INVALID_ARGUMENT",
        `${what} ${JSON.stringify(other)} and ${JSON.stringify(name)} would be one identity ` +
          `(both use the cursor file .cursors/${identity(name)}.txt); keep one of them`,
      );
    }
  });
}

/** Accepts a task as the reference takes it (`task-12.md`), or `task-12`, or `12`. */
export function parseTaskId(value: string): string {
  let id = value.trim();
  if (id.endsWith(".md")) id = id.slice(0, -3);
  if (id.startsWith("task-")) id = id.slice(5);
  if (id.includes(".CLAIMED-")) id = id.slice(0, id.indexOf(".CLAIMED-"));
  return validateName("task", id);
}
