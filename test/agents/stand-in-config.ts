import { mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Sandbox } from "./sandbox.js";

/*
 * Each tool's own configuration, as its user has it, pointed at the stand-in model on
 * 127.0.0.1 and with the project folder already trusted (what answering the tool's "trust this
 * folder" question records). Returns the environment to start the tool with.
 */

/**
 * Codex: the stand-in as the user's model provider in $CODEX_HOME/config.toml; with
 * `trusted: false` the folder is left for the user to trust at Codex's own question.
 */
export function codexStandIn(
  sandbox: Sandbox,
  url: string,
  { trusted = true } = {},
): Record<string, string> {
  const codexHome = join(sandbox.home, ".codex");
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    join(codexHome, "config.toml"),
    [
      'model = "gpt-5.1-codex"',
      'model_provider = "stand-in"',
      "",
      "[model_providers.stand-in]",
      'name = "stand-in"',
      `base_url = "${url}/v1"`,
      'wire_api = "responses"',
      "",
      ...(trusted
        ? [`[projects."${realpathSync(sandbox.project)}"]`, 'trust_level = "trusted"', ""]
        : []),
    ].join("\n"),
  );
  return { CODEX_HOME: codexHome };
}

/**
 * Gemini CLI: an API key in the user's settings, the stand-in as its base URL; with
 * `relaunch: true` it keeps its own relaunch at start-up, as on a user's first run.
 */
export function geminiStandIn(
  sandbox: Sandbox,
  url: string,
  { relaunch = false } = {},
): Record<string, string> {
  mkdirSync(join(sandbox.home, ".gemini"), { recursive: true });
  writeFileSync(
    join(sandbox.home, ".gemini", "settings.json"),
    JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } } }),
  );
  const env = { GOOGLE_GEMINI_BASE_URL: url, GEMINI_API_KEY: "stand-in" };
  // One process: the relaunch with a larger heap only costs time here.
  return relaunch ? env : { ...env, GEMINI_CLI_NO_RELAUNCH: "true" };
}

/**
 * Claude Code: the stand-in as ANTHROPIC_BASE_URL, the folder trusted in ~/.claude.json. With
 * `firstRun: true`, as a user meets it: nothing trusted, and the credential from a key helper in
 * ~/.claude/settings.json (an ANTHROPIC_API_KEY would first need Claude Code's connectivity
 * check, which reaches api.anthropic.com); written over that file, so after `setup`. With
 * `interactive: true`, a user's second run in a terminal: the first run's questions (text
 * style, folder trust) answered before, in ~/.claude.json, and the key helper; `settings` adds
 * to the user's ~/.claude/settings.json.
 */
export function claudeStandIn(
  sandbox: Sandbox,
  url: string,
  {
    firstRun = false,
    interactive = false,
    settings = {},
  }: { firstRun?: boolean; interactive?: boolean; settings?: Record<string, unknown> } = {},
): Record<string, string> {
  const quiet = { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_AUTOUPDATER: "1" };
  if (firstRun || interactive) {
    mkdirSync(join(sandbox.home, ".claude"), { recursive: true });
    writeFileSync(
      join(sandbox.home, ".claude", "settings.json"),
      JSON.stringify({ apiKeyHelper: "echo sk-ant-stand-in", ...settings }),
    );
  }
  if (firstRun) return { ANTHROPIC_BASE_URL: url, ...quiet };
  if (interactive) {
    const answered = {
      hasCompletedOnboarding: true,
      theme: "dark",
      projects: { [realpathSync(sandbox.project)]: { hasTrustDialogAccepted: true } },
    };
    writeFileSync(join(sandbox.home, ".claude.json"), JSON.stringify(answered));
    return { ANTHROPIC_BASE_URL: url, ...quiet, MCP_CONNECTION_NONBLOCKING: "false" };
  }
  const config = {
    projects: { [realpathSync(sandbox.project)]: { hasTrustDialogAccepted: true } },
  };
  writeFileSync(join(sandbox.home, ".claude.json"), JSON.stringify(config));
  return {
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: "sk-ant-stand-in",
    ...quiet,
    MCP_CONNECTION_NONBLOCKING: "false",
  };
}

/**
 * Qwen Code: the stand-in as an OpenAI-compatible provider, by the three variables its own help
 * names for a headless set-up (OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL); no file.
 */
export function qwenStandIn(_sandbox: Sandbox, url: string): Record<string, string> {
  return { OPENAI_API_KEY: "stand-in", OPENAI_BASE_URL: `${url}/v1`, OPENAI_MODEL: "stand-in" };
}

/**
 * pi: the stand-in as a provider of the user's own in $PI_CODING_AGENT_DIR/models.json (an
 * OpenAI Chat Completions API, as its docs/models.md adds a local model) and the default model
 * in its settings.json, so `pi` starts on it with no flag; PI_OFFLINE keeps its update check
 * and install ping off the network.
 */
export function piStandIn(sandbox: Sandbox, url: string): Record<string, string> {
  const dir = join(sandbox.home, ".pi", "agent");
  mkdirSync(dir, { recursive: true });
  const model = { id: "stand-in", reasoning: false, input: ["text"] };
  const provider = { baseUrl: `${url}/v1`, api: "openai-completions", apiKey: "stand-in" };
  const providers = { "stand-in": { ...provider, models: [model] } };
  writeFileSync(join(dir, "models.json"), JSON.stringify({ providers }));
  const settings = { defaultProvider: "stand-in", defaultModel: "stand-in" };
  writeFileSync(join(dir, "settings.json"), JSON.stringify(settings));
  return { PI_OFFLINE: "1" };
}

/**
 * GitHub Copilot CLI: the stand-in as its custom provider (BYOK) by the variables its own
 * `copilot help providers` names, offline (`COPILOT_OFFLINE`: no GitHub sign-in, telemetry or
 * update check, which its help says a local provider allows); with `trusted: false` the folder
 * is left for the user to trust at its own question, else it is in config.json's trustedFolders
 * (what answering "remember this folder" records). The binary unpacks its 235 MB package once
 * into a cache shared by the tests rather than into each sandbox's home.
 */
export function copilotStandIn(
  sandbox: Sandbox,
  url: string,
  { trusted = true } = {},
): Record<string, string> {
  if (trusted) {
    mkdirSync(join(sandbox.home, ".copilot"), { recursive: true });
    writeFileSync(
      join(sandbox.home, ".copilot", "config.json"),
      JSON.stringify({ trustedFolders: [realpathSync(sandbox.project)] }),
    );
  }
  return {
    COPILOT_PROVIDER_BASE_URL: `${url}/v1`,
    COPILOT_PROVIDER_API_KEY: "stand-in",
    COPILOT_MODEL: "stand-in",
    COPILOT_OFFLINE: "true",
    COPILOT_PKG_CACHE_HOME: join(tmpdir(), "agent-chat-copilot-pkg"),
  };
}

/**
 * OpenCode: the stand-in as an OpenAI-compatible provider of the user's (its bundled
 * `@ai-sdk/openai-compatible`) and the default model, given in OPENCODE_CONFIG_CONTENT (merged
 * after the user's files, so setup's opencode.json stays as setup wrote it); no fetch of its
 * model list from models.dev, which the sandbox cannot reach.
 */
export function opencodeStandIn(_sandbox: Sandbox, url: string): Record<string, string> {
  const provider = {
    npm: "@ai-sdk/openai-compatible",
    name: "stand-in",
    options: { baseURL: `${url}/v1`, apiKey: "stand-in" },
    models: { "stand-in": { name: "stand-in", tool_call: true } },
  };
  return {
    OPENCODE_CONFIG_CONTENT: JSON.stringify({
      model: "stand-in/stand-in",
      provider: { "stand-in": provider },
    }),
    OPENCODE_DISABLE_MODELS_FETCH: "true",
  };
}
