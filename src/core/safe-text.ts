import { parseTo } from "./message.js";
import { isValidName, sameAgent } from "./names.js";

/**
 * Text that others wrote (bodies, titles, topics, names from a root's files), made safe to put
 * before a model or on a terminal (docs/signatures.md, "What the model sees"). One place, used
 * by every surface that prints it.
 */

/**
 * What a terminal acts on or a reader cannot see: C0 controls but tab and newline (ESC starts
 * cursor moves and OSC 52 clipboard writes, CR returns over a line), DEL, C1 controls, and the
 * bidirectional controls that show text in another order than it is read ("Trojan Source"),
 * the line and paragraph separators some renderers break lines at (a line no frame marks), and
 * the invisible ones (zero-width spaces and joiners, the soft hyphen, the byte order mark, the
 * tag characters) that split a word or a rule so that no check sees it while a reader does.
 */
const UNSAFE =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff\u{e0000}-\u{e007f}]|\u034f/gu;

/** `text` with every unsafe character written as its escape (`\u001b`); newlines and tabs kept. */
export function escapeControls(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, "0")}`);
}

/** One line of safe text: a line break (CR LF or LF) as `\n`, then {@link escapeControls}. */
export function safeLine(text: string): string {
  return escapeControls(text.replace(/\r?\n/g, "\\n"));
}

/**
 * Each line of a text written by others behind `prefix`, which no line of ours starts with: a
 * body cannot draw a header, a verified mark, a rule or a footer of the output it sits in.
 */
export function framed(text: string, prefix: string): string {
  return escapeControls(text)
    .split("\n")
    .map((line) => `${prefix}${line}`)
    .join("\n");
}

/**
 * The sender a message may be shown as: its `from` when it passes the name rules (ASCII, so a
 * look-alike of another script fails them), else undefined. Such a `from` (words, a mark of its
 * own) is never shown as a sender; the message is marked forged with {@link NOT_A_SENDER}.
 */
export function shownSender(from: string): string | undefined {
  return isValidName("agent", from) ? from : undefined;
}

/** ` from NAME` when the sender is a valid agent name, else nothing: never raw file text. */
export function fromName(message: { from: string }): string {
  const sender = shownSender(message.from);
  return sender === undefined ? "" : ` from ${sender}`;
}

/** Why a message whose `from` is no name is marked forged, in every surface alike. */
export const NOT_A_SENDER = "the sender is not a valid name";

/**
 * Letters that read as others in many fonts, as one form: `a1ice` and `aIice` read as `alice`,
 * `rnallory` as `mallory`, `b0b` as `bob`; `.`, `-` and `_` are left out (`al_ice`). The name
 * rules keep names ASCII, so a look-alike from another script cannot be a sender at all.
 */
function skeleton(name: string): string {
  return name
    .toLowerCase()
    .replace(/[-_.]/g, "")
    .replace(/rn/g, "m")
    .replace(/vv/g, "w")
    .replace(/cl/g, "d")
    .replace(/0/g, "o")
    .replace(/[1|]/g, "l");
}

/**
 * The first of `known` (the channel's members, its maintainer) that `from` reads as but is not:
 * a message from it is marked forged in every surface ({@link lookAlikeNote}).
 */
export function lookAlikeOf(from: string, known: Iterable<string>): string | undefined {
  const form = skeleton(from);
  for (const name of known) {
    if (!sameAgent(name, from) && skeleton(name) === form) return name;
  }
  return undefined;
}

/** Why a message from a look-alike of `name` is marked forged. */
export function lookAlikeNote(name: string): string {
  return `the sender's name reads as ${name}'s but is another`;
}

/** A timestamp as the SPEC writes it (ISO 8601, seconds, an offset), else `?`: never free text. */
export function shownTimestamp(ts: string): string {
  return /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?$/.test(ts) ? ts : "?";
}

/** A status as one word (`needs-approval`, `task.updated`), else `?`: never free text. */
export function shownStatus(status: string): string {
  return /^[A-Za-z0-9][A-Za-z0-9._:-]{0,39}$/.test(status) ? status : "?";
}

/** The `to` field as written when it is `all` or a list of valid names, else `?`. */
export function shownRecipients(to: string): string {
  if (parseTo(to).broadcast) return "all";
  const names = to.replace(/^\s*\[|\]\s*$/g, "").split(",");
  const valid = names.every((n) => isValidName("agent", n.trim().replace(/^["']|["']$/g, "")));
  return valid ? to.trim() : "?";
}
