import { AgentChatError } from "../errors.js";
import { ROOT_NAME } from "./labels.js";

export const MAX_FOLDER_NAME = 64;
export const MAX_FILE_NAME = 128;
export const MAX_DESCRIPTION = 120;

const FOLDER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const DEVICE = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$/i;

/**
 * Folder and file names become path segments, so one rule keeps them inside the workspace:
 * an ASCII letter or digit first, then letters, digits, `.`, `_`, `-`. That excludes `..`,
 * separators, absolute paths, NUL and control characters, and the leading `.`/`_` that the
 * workspace keeps for its own files (`.kfile`, `.focus`, the lock).
 */
export function validateFolderName(name: string): string {
  checkName("folder", name, FOLDER_NAME, MAX_FOLDER_NAME);
  if (name === ROOT_NAME) {
    throw new AgentChatError("INVALID_NAME", `"root" is the name of the workspace's root folder`);
  }
  return name;
}

export function validateFileName(name: string): string {
  return checkName("file", name, FILE_NAME, MAX_FILE_NAME);
}

function checkName(kind: string, name: string, pattern: RegExp, max: number): string {
  if (name.length === 0) throw new AgentChatError("INVALID_NAME", `${kind} name is empty`);
  if (name.length > max) {
    throw new AgentChatError(
      "INVALID_NAME",
      `${kind} name is too long (${name.length} characters; at most ${max})`,
    );
  }
  if (!pattern.test(name) || DEVICE.test(name)) {
    throw new AgentChatError(
      "INVALID_NAME",
      `invalid ${kind} name ${JSON.stringify(name.slice(0, 60))}: use ASCII letters, digits, ` +
        `'.', '_' and '-', starting with a letter or digit (nothing may leave the workspace)`,
    );
  }
  return name;
}

export function validateDescription(text: string): string {
  if (/[\x00-\x1f\x7f\u2028\u2029]/.test(text)) {
    throw new AgentChatError("INVALID_ARGUMENT", "a folder description must be one line of text");
  }
  if (text.length > MAX_DESCRIPTION) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `a folder description is short: at most ${MAX_DESCRIPTION} characters (got ${text.length})`,
    );
  }
  return text;
}
