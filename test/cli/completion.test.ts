import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * `agent-chat completion bash|zsh|fish`, each script loaded into its real shell and asked for
 * the candidates at the end of a line, as the shell does on Tab. bash calls the function with
 * COMP_WORDS; fish answers `complete -C` itself; zsh's `compadd` needs the line editor, so it is
 * replaced by one that prints what it is given, filtered by the word at the cursor as zsh does.
 */
const tmp = tempDir();
afterAll(() => tmp.cleanup());
const scripts: Record<string, string> = {};

beforeAll(async () => {
  for (const shell of ["bash", "zsh", "fish"]) {
    const r = await runCli(["completion", shell]);
    expect(r).toMatchObject({ code: 0, stderr: "" });
    scripts[shell] = join(tmp.dir, `agent-chat.${shell}`);
    writeFileSync(scripts[shell]!, r.stdout);
  }
});

/** zsh's completion context for the words after `$0` (the script), with `compadd` printing. */
const ZSH_HARNESS = `compadd() { shift; local w; for w in "$@"; do [[ $w == \${PREFIX}* ]] && print -r -- $w; done; true }
_files() { }
source "$0"
words=(agent-chat "$@"); CURRENT=\${#words}; PREFIX=\${words[CURRENT]}
_agent_chat`;

/** The shell's candidates for the line's last word (`words` end with the word at the cursor). */
const ASK: Record<string, (script: string, words: string[]) => string[]> = {
  bash: (script, words) =>
    lines("bash", [
      "--norc",
      "-c",
      `source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _agent_chat; printf '%s\\n' "\${COMPREPLY[@]}"`,
      script,
      ...words,
    ]),
  zsh: (script, words) => lines("zsh", ["-f", "-c", ZSH_HARNESS, script, ...words.slice(1)]),
  fish: (script, words) =>
    lines("fish", ["-N", "-c", 'source $argv[1]; complete -C "$argv[2]"', script, words.join(" ")]),
};

function lines(shell: string, args: string[]): string[] {
  return execFileSync(shell, args, { encoding: "utf8" })
    .split("\n")
    .filter((line) => line !== "");
}

describe.each(["bash", "zsh", "fish"])("completion for %s", (shell) => {
  const ask = (...words: string[]) => ASK[shell]!(scripts[shell]!, words);

  it("completes every command there is, the lazily loaded ones too", () => {
    const all = ask("agent-chat", "");
    for (const command of ["post", "read", "wait", "serve", "govern", "lease", "view", "ws"]) {
      expect(all).toContain(command);
    }
    expect(all).toContain("completion");
    expect(all).toContain("version");
    expect(ask("agent-chat", "po").sort()).toEqual(["policy", "post"]);
  });

  it("completes subcommands, and a command's own options and the program's", () => {
    expect(ask("agent-chat", "task", "")).toEqual(
      expect.arrayContaining(["add", "create", "claim"]),
    );
    expect(ask("agent-chat", "task", "")).not.toContain("init");
    expect(ask("agent-chat", "id", "authority", "").sort()).toEqual([
      "add",
      "help",
      "list",
      "remove",
    ]);
    expect(ask("agent-chat", "post", "review", "--fr")).toEqual(["--from"]);
    expect(ask("agent-chat", "post", "review", "--ro")).toEqual(["--root"]);
  });

  it("takes the word after an option that wants a value as that value, not a command", () => {
    expect(ask("agent-chat", "--root", "/tmp/x", "rea")).toEqual(["read"]);
    expect(ask("agent-chat", "--root", "task", "")).toContain("init");
    expect(ask("agent-chat", "post", "review", "--from", "po")).not.toContain("post");
  });
});
