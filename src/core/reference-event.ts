import { AgentChatError } from "./errors.js";

/**
 * chat.py 0.7 reads every message whose status starts with `event.` as an adapter event: its
 * body must be one JSON object by its rules, and one that is not makes its `event read` fail
 * for the whole channel. So a post with such a status is checked by the same rules first.
 */
const PRIMITIVES = new Set([
  "messages",
  "cursors",
  "wait",
  "tasks",
  "dependencies",
  "leases",
  "path_locks",
  "state_summary",
]);
const STATUSES = new Set(["ready", "busy", "idle", "blocked", "stopped"]);
const COMMON = ["schema_version", "event", "agent", "harness", "ts"];
const FIELDS: Record<string, Set<string>> = {
  capability: new Set([...COMMON, "primitives"]),
  status: new Set([...COMMON, "status", "detail"]),
};
/** The characters chat.py refuses in event text: C0 and C1 controls, lone surrogates. */
const UNSAFE_TEXT = /[\u0000-\u001f\u007f-\u009f\ud800-\udfff]/;
/** ISO-8601 with an offset, as Python's `fromisoformat` takes it. */
const TIMESTAMP = /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d{1,6})?)?([Zz]|[+-]\d\d:?\d\d)$/;

/** Throws INVALID_EVENT, saying chat.py's error code, unless `body` is a valid event for `status`. */
export function checkReferenceEvent(status: string, body: string): void {
  if (!status.startsWith("event.")) return;
  const bad = (code: string, why: string) =>
    new AgentChatError(
      "INVALID_EVENT",
      `a ${status} message is an event chat.py 0.7 validates (${code}: ${why}); ` +
        `its body must be JSON, e.g. {"schema_version":1,"event":"status","agent":"bob",` +
        `"harness":"cli","ts":"2026-01-01T00:00:00+00:00","status":"busy"}`,
    );
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(body.trim());
  } catch {
    throw bad("EVENT_MALFORMED_BODY", "the body is not JSON");
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw bad("EVENT_INVALID_RECORD", "the body must be a JSON object");
  }
  if (v.schema_version !== 1) throw bad("EVENT_UNSUPPORTED_VERSION", "schema_version must be 1");
  const type = String(v.event);
  const allowed = FIELDS[type];
  if (allowed === undefined) throw bad("EVENT_INVALID_TYPE", "event must be capability or status");
  if (status !== `event.${type}`)
    throw bad("EVENT_INVALID_TYPE", `the status must be event.${type}`);
  const unknown = Object.keys(v).filter((k) => !allowed.has(k));
  if (unknown.length > 0) throw bad("EVENT_UNKNOWN_FIELD", unknown.sort().join(", "));
  checkCommon(v, bad);
  if (type === "capability") checkPrimitives(v.primitives, bad);
  else checkStatus(v, bad);
}

type Refusal = (code: string, why: string) => Error;

function checkCommon(v: Record<string, unknown>, bad: Refusal): void {
  for (const field of ["agent", "harness"]) {
    const text = v[field];
    if (typeof text !== "string" || !safeName(text))
      throw bad("EVENT_INVALID_TEXT", `${field} is invalid`);
  }
  if (typeof v.ts !== "string" || !TIMESTAMP.test(v.ts)) {
    throw bad("EVENT_INVALID_TIMESTAMP", "ts must be ISO-8601 with an offset");
  }
}

function checkStatus(v: Record<string, unknown>, bad: Refusal): void {
  if (!STATUSES.has(String(v.status))) throw bad("EVENT_INVALID_STATUS", String(v.status));
  if ("detail" in v && (typeof v.detail !== "string" || UNSAFE_TEXT.test(v.detail))) {
    throw bad("EVENT_INVALID_TEXT", "detail is invalid");
  }
}

function checkPrimitives(value: unknown, bad: Refusal): void {
  if (!Array.isArray(value) || value.length === 0 || value.some((p) => typeof p !== "string")) {
    throw bad("EVENT_INVALID_PRIMITIVES", "primitives must be strings");
  }
  const list = value as string[];
  if (new Set(list).size !== list.length)
    throw bad("EVENT_DUPLICATE_PRIMITIVE", "primitives must be unique");
  const unknown = list.find((p) => !PRIMITIVES.has(p));
  if (unknown !== undefined) throw bad("EVENT_UNKNOWN_PRIMITIVE", unknown);
}

/** chat.py's safe name: not empty, no control character, separator or `:`, no leading `.`/`_`. */
function safeName(text: string): boolean {
  return text !== "" && !UNSAFE_TEXT.test(text) && !/[/\\:]/.test(text) && !/^[._]/.test(text);
}

export interface ReferenceEventInput {
  type: "capability" | "status";
  agent: string;
  harness: string;
  /** status: ready, busy, idle, blocked or stopped. */
  status?: string;
  detail?: string;
  /** capability: default every primitive chat.py knows. */
  primitives?: string[];
  /** ISO-8601 with an offset. */
  ts: string;
}

/**
 * The message chat.py 0.7's `event post` writes: status `event.<type>`, title `event:<type>`,
 * the event as compact JSON with sorted keys; validated by its rules (INVALID_EVENT otherwise).
 */
export function referenceEvent(input: ReferenceEventInput): {
  status: string;
  title: string;
  body: string;
} {
  const event: Record<string, unknown> = {
    schema_version: 1,
    event: input.type,
    agent: input.agent,
    harness: input.harness,
    ts: input.ts,
  };
  if (input.type === "capability") event.primitives = input.primitives ?? [...PRIMITIVES];
  else {
    event.status = input.status;
    if (input.detail !== undefined) event.detail = input.detail;
  }
  const sorted = Object.fromEntries(
    Object.keys(event)
      .sort()
      .map((k) => [k, event[k]]),
  );
  const message = {
    status: `event.${input.type}`,
    title: `event:${input.type}`,
    body: JSON.stringify(sorted),
  };
  checkReferenceEvent(message.status, message.body);
  return message;
}

/** The event a message carries when chat.py's `event read` would accept it; else undefined. */
export function readReferenceEvent(
  status: string,
  body: string,
): Record<string, unknown> | undefined {
  if (!status.startsWith("event.")) return undefined;
  checkReferenceEvent(status, body);
  return JSON.parse(body.trim());
}
