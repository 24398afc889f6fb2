import { claudeCode, claudeCodeHooks } from "./claude-code.js";
import { codex, codexHooks } from "./codex.js";
import { copilotCli, copilotCliHooks } from "./copilot-cli.js";
import { geminiCli, geminiCliHooks } from "./gemini-cli.js";
import type { HookDialect, Host } from "./host.js";
import { opencode, opencodeHooks } from "./opencode.js";
import { pi, piHooks } from "./pi.js";
import { qwenCode, qwenCodeHooks } from "./qwen-code.js";

/**
 * Every agent tool agent-chat sets up, in the order setup, doctor and the docs list them.
 * Adding one: its module (host.ts says what it gives), its entry in both lists here, its tests,
 * its docs row.
 */
export const HOSTS: readonly Host[] = [
  claudeCode,
  codex,
  geminiCli,
  qwenCode,
  pi,
  copilotCli,
  opencode,
];

/**
 * Their hook dialects, in the same order, apart from the hosts: the hook, which runs on every
 * prompt, reads only these, and its bundle holds none of setup.
 */
export const HOOK_DIALECTS: readonly HookDialect[] = [
  claudeCodeHooks,
  codexHooks,
  geminiCliHooks,
  qwenCodeHooks,
  piHooks,
  copilotCliHooks,
  opencodeHooks,
];
