import { parseArgs } from "./args.js";
import { clip, kfileError } from "./error.js";
import {
  CLARIFY_ACTIONS,
  type ClarifyAction,
  type KFile,
  RESPONSE_ACTIONS,
  type ResponseAction,
  UPDATE_ACTIONS,
  UPDATE_SYNTAX,
  type UpdateAction,
} from "./labels.js";
import { tokenize } from "./tokens.js";

const KEYS = ["ResponseAction", "UpdateAction", "ClarifyAction"] as const;
type Key = (typeof KEYS)[number];

/**
 * Parses the three-line text form. Blank lines and lines starting with `#` are ignored, CRLF is
 * accepted, the three keys may come in any order but each exactly once. Errors name the line,
 * what was expected there and the allowed labels.
 */
export function parseKFile(text: string): KFile {
  const found: Partial<Record<Key, number>> = {};
  let response: ResponseAction | undefined;
  let update: UpdateAction | undefined;
  let clarify: ClarifyAction | undefined;
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const entry = keyLine(raw, i + 1);
    if (!entry) continue;
    const { key, value, line } = entry;
    if (found[key] !== undefined) {
      throw kfileError(line, `${key} given twice (first on line ${found[key]})`);
    }
    found[key] = line;
    if (key === "ResponseAction") response = label(value, RESPONSE_ACTIONS, key, line);
    else if (key === "ClarifyAction") clarify = label(value, CLARIFY_ACTIONS, key, line);
    else update = parseUpdate(value, line);
  }
  const missing = KEYS.find((key) => found[key] === undefined);
  if (missing) {
    throw kfileError(
      undefined,
      `missing the line "${missing}: …" (a K-file has three lines: ResponseAction, UpdateAction, ClarifyAction)`,
    );
  }
  if (update!.args === undefined && update!.action !== "none" && clarify === "none") {
    throw kfileError(
      found.UpdateAction,
      `UpdateAction ${update!.action} needs its arguments when ClarifyAction is none: ` +
        UPDATE_SYNTAX[update!.action],
    );
  }
  return { response: response!, update: update!, clarify: clarify! };
}

/** One `Key: value` line; undefined for a blank line or a `#` comment. */
function keyLine(raw: string, line: number): { key: Key; value: string; line: number } | undefined {
  const trimmed = raw.trim();
  if (trimmed === "" || trimmed.startsWith("#")) return undefined;
  const colon = trimmed.indexOf(":");
  if (colon < 0) {
    throw kfileError(
      line,
      `expected "Key: value" with Key one of ${KEYS.join(", ")}; got ${JSON.stringify(clip(trimmed))}`,
    );
  }
  const written = trimmed.slice(0, colon).trim();
  const key = KEYS.find((k) => k.toLowerCase() === written.toLowerCase());
  if (!key) {
    throw kfileError(
      line,
      `unknown key ${JSON.stringify(clip(written))}; a K-file has exactly the keys ${KEYS.join(", ")}`,
    );
  }
  return { key, value: trimmed.slice(colon + 1).trim(), line };
}

function label<T extends string>(value: string, labels: readonly T[], key: Key, line: number): T {
  const found = labels.find((l) => l === value);
  if (found !== undefined) return found;
  throw kfileError(
    line,
    `${key} ${JSON.stringify(clip(value))} is not a label; allowed: ${labels.join(" | ")}`,
  );
}

/** Parses the value of the UpdateAction line, e.g. `rename-folder([blog], [posts], "…")`. */
export function parseUpdate(value: string, line = 2): UpdateAction {
  const m = /^([a-z-]+)\s*(?:\(([\s\S]*)\))?$/.exec(value);
  const action = label(m?.[1] ?? value.split("(")[0]!.trim(), UPDATE_ACTIONS, "UpdateAction", line);
  if (!m) {
    throw kfileError(line, `malformed UpdateAction; expected ${UPDATE_SYNTAX[action]}`);
  }
  if (m[2] === undefined) return { action };
  if (action === "none") {
    throw kfileError(line, "UpdateAction none takes no arguments");
  }
  return parseArgs(action, tokenize(m[2], line, action), line);
}
