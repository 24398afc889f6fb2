import { type Message, serializeMessage } from "../core/message.js";
import { NOT_A_SENDER, safeLine, shownSender } from "../core/safe-text.js";
import * as slashParser from "../core/slash.js";

type SlashParser = Pick<typeof slashParser, "slashJson" | "slashOfBody">;

/**
 * The reference's human form: a rule of 70 `=`, the message file's text, an empty line. A
 * signed message's rule ends with what its signature proves (docs/signatures.md). The rule is
 * the one line a message's own text cannot reach: a line of its text that starts like a rule is
 * shown behind a `\` (control characters are escaped where everything is printed, `ctx.out`).
 * A sender that is no valid name is marked.
 */
export function formatMessageHuman(message: Message): string {
  const text = serializeMessage({ ...message, extra: message.extra });
  const shown = text.replace(RULE_LIKE, "\\$1");
  return `${RULE}${trustMark(message)}\n${shown}\n`;
}

const RULE = "=".repeat(70);
/**
 * A line that a reader could take for the rule between two messages: one that starts with 20
 * marks of any kind, `=` or any other symbol, punctuation or spacing that draws a line (`꞊`,
 * `═`, a row of `=` with invisible characters between them), never with a letter or a digit.
 */
const RULE_LIKE =
  /^([\p{P}\p{S}\p{Cf}\p{Mn}\p{Me}\p{Lm}\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]{20,})/gmu;

function trustMark(message: Message): string {
  if (shownSender(message.from) === undefined) return ` FORGED: ${NOT_A_SENDER}`;
  if (message.trust === "verified") return ` verified: signed by ${message.from}`;
  if (message.trust === "forged")
    return ` FORGED: ${safeLine(message.trustNote ?? "bad signature")}`;
  return "";
}

/** The JSON form of a message, for `--json` output. */
export function messageJson(message: Message): Record<string, unknown> {
  return jsonOf(message, slashParser);
}

/**
 * {@link messageJson} of each, for the commands of the lean entry: the slash parser is loaded
 * only when a body starts with `/` (after blank space), the only bodies that can carry a command.
 */
export async function messagesJson(
  messages: readonly Message[],
): Promise<Array<Record<string, unknown>>> {
  const now = messagesJsonNow(messages);
  if (now) return now;
  const parser = await import("../core/slash.js");
  return messages.map((m) => jsonOf(m, parser));
}

/**
 * {@link messagesJson} without waiting, when no body can carry a command (none starts with
 * `/`); undefined when one does (the slash parser is then loaded: {@link messagesJson}).
 */
export function messagesJsonNow(
  messages: readonly Message[],
): Array<Record<string, unknown>> | undefined {
  if (messages.some((m) => /^\s*\//.test(m.body))) return undefined;
  return messages.map((m) => jsonOf(m, undefined));
}

function jsonOf(message: Message, slash: SlashParser | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {
    seq: message.seq,
    channel: message.channel,
    from: message.from,
    to: message.to,
  };
  if (message.replyTo !== undefined) out.reply_to = message.replyTo;
  out.ts = message.ts;
  out.status = message.status;
  out.title = message.title;
  out.body = message.body;
  out.file = message.file;
  if (Object.keys(message.extra).length > 0) out.extra = message.extra;
  if (message.trust !== undefined) out.trust = message.trust;
  if (message.trustNote !== undefined) out.trust_note = message.trustNote;
  // A body that starts with a /b00t or /chat line carries a command; it is only described here,
  // never run (a message is untrusted input; see docs/slash.md).
  const command = slash?.slashOfBody(message.body);
  if (command) out.slash = slash!.slashJson(command, { channel: message.channel });
  return out;
}
