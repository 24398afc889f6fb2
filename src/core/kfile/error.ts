import { AgentChatError } from "../errors.js";

/** The error of a K-file that does not parse, naming its line when there is one. */
export function kfileError(line: number | undefined, message: string): AgentChatError {
  return new AgentChatError(
    "INVALID_KFILE",
    line === undefined ? `K-file: ${message}` : `K-file line ${line}: ${message}`,
  );
}

/** Input quoted in an error, cut at 60 characters. */
export function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}
