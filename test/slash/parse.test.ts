import { describe, expect, it } from "vitest";
import {
  chatVerbs,
  implicitDownloadNote,
  isAllowed,
  parseSlash,
  type SlashCommand,
  type SlashContext,
  slashAllowlist,
  slashOfBody,
  toCliArgs,
} from "../../src/core/slash.js";

function argv(line: string, context: SlashContext = { channel: "review", as: "bob" }): string[] {
  const parse = parseSlash(line);
  if (!parse.ok) throw new Error(`${line}: ${parse.error}`);
  return toCliArgs(parse.command, context);
}

function command(line: string): SlashCommand {
  const parse = parseSlash(line);
  if (!parse.ok) throw new Error(`${line}: ${parse.error}`);
  return parse.command;
}

describe("/b00t follows b00t's parse_b00t_command and to_cli_args", () => {
  const table: Array<[string, string[]]> = [
    // `/b00t` alone, and `model` with no action, mean `model list`.
    ["/b00t", ["model", "list"]],
    ["/b00t model", ["model", "list"]],
    ["/b00t models", ["model", "list"]],
    ["/b00t model list", ["model", "list"]],
    ["/b00t model ls", ["model", "list"]],
    ["/b00t models ls", ["model", "list"]],
    ["/b00t model install llava", ["model", "download", "llava"]],
    ["/b00t model add llava", ["model", "download", "llava"]],
    ["/b00t model load llava", ["model", "download", "llava"]],
    ["/b00t model download llava", ["model", "download", "llava"]],
    ["/b00t model remove deepseek", ["model", "remove", "deepseek", "--yes"]],
    ["/b00t model rm deepseek", ["model", "remove", "deepseek", "--yes"]],
    ["/b00t model unload deepseek", ["model", "remove", "deepseek", "--yes"]],
    ["/b00t model env", ["model", "env"]],
    ["/b00t model env llava", ["model", "env", "llava"]],
    ["/b00t model export", ["model", "env"]],
    ["/b00t model export deepseek", ["model", "env", "deepseek"]],
    ["/b00t model serve", ["model", "serve"]],
    ["/b00t model serve llava", ["model", "serve", "llava"]],
    ["/b00t model stop", ["model", "stop"]],
    ["/b00t model stop vllm-llava", ["model", "stop", "vllm-llava"]],
    // Any other word after `model` is a model name to download.
    ["/b00t model llava", ["model", "download", "llava"]],
    ["/b00t models qwen2.5-7b", ["model", "download", "qwen2.5-7b"]],
    // Words are case-sensitive, as in b00t: `LIST` is a model name.
    ["/b00t model LIST", ["model", "download", "LIST"]],
    // Like b00t, extra words after the ones an action takes are ignored; spacing does not matter.
    ["/b00t model serve llava --gpu 0", ["model", "serve", "llava"]],
    ["  /b00t   model\tlist  ", ["model", "list"]],
  ];
  it.each(table)("%s → %j", (line, expected) => {
    expect(argv(line, { channel: "ignored", as: "ignored" })).toEqual(expected);
  });

  it.each([
    ["/b00t model install", "needs a model name"],
    ["/b00t model add", "needs a model name"],
    ["/b00t model rm", "needs a model name"],
    ["/b00t model unload", "needs a model name"],
    ["/b00t deploy now", 'unknown /b00t sub-command "deploy"'],
    ["/hello world", "unknown slash command /hello"],
    ["b00t model list", "not a slash command"],
    ["", "not a slash command"],
  ])("%j is refused: %s", (line, message) => {
    const parse = parseSlash(line);
    expect(parse.ok).toBe(false);
    if (!parse.ok) expect(parse.error).toContain(message);
  });

  it("a download read from a bare word carries a note naming the likely typo; an explicit one none", () => {
    const typo = parseSlash("/b00t model lsit");
    expect(typo.ok && typo.command).toMatchObject({ action: "download", implicit: true });
    expect(typo.ok && implicitDownloadNote(typo.command)).toBe(
      '"lsit" is no /b00t model sub-command, so b00t reads it as a model to download ' +
        "(did you mean /b00t model list?); to download it, write /b00t model download lsit",
    );
    const name = parseSlash("/b00t model frobnicate");
    expect(name.ok && implicitDownloadNote(name.command)).toMatch(/^"frobnicate" is no .*; to/);
    const explicit = parseSlash("/b00t model download frobnicate");
    expect(explicit.ok && explicit.command).toEqual({
      verb: "b00t",
      action: "download",
      target: "frobnicate",
    });
    expect(explicit.ok && implicitDownloadNote(explicit.command)).toBeUndefined();
  });

  it("only the first non-empty line counts", () => {
    expect(argv("\n/b00t model rm llava\n/b00t model list")).toEqual([
      "model",
      "remove",
      "llava",
      "--yes",
    ]);
  });
});

describe("/chat maps to agent-chat commands", () => {
  const table: Array<[string, string[]]> = [
    ["/chat read", ["read", "review", "--as", "bob"]],
    ["/chat r", ["read", "review", "--as", "bob"]],
    ["/chat read all", ["read", "review", "--as", "bob", "--all"]],
    ["/chat read #deploy", ["read", "deploy", "--as", "bob"]],
    ["/chat wait", ["wait", "review", "--as", "bob"]],
    ["/chat w 60", ["wait", "review", "--as", "bob", "--timeout", "60"]],
    ["/chat post hello  there", ["post", "review", "--from", "bob", "--body", "hello  there"]],
    ["/chat say hi", ["post", "review", "--from", "bob", "--body", "hi"]],
    ["/chat send hi", ["post", "review", "--from", "bob", "--body", "hi"]],
    ["/chat p hi", ["post", "review", "--from", "bob", "--body", "hi"]],
    [
      "/chat post #ops @alice @carol deploy done, see #12",
      ["post", "ops", "--from", "bob", "--to", "alice,carol", "--body", "deploy done, see #12"],
    ],
    [
      "/chat reply 7 agreed",
      ["post", "review", "--from", "bob", "--reply", "7", "--body", "agreed"],
    ],
    ["/chat re #7 agreed", ["post", "review", "--from", "bob", "--reply", "7", "--body", "agreed"]],
    ["/chat peek", ["peek", "review"]],
    ["/chat peek 5", ["peek", "review", "-n", "5"]],
    ["/chat claim task-7", ["claim", "review", "task-7", "--as", "bob"]],
    ["/chat take 7", ["claim", "review", "7", "--as", "bob"]],
    ["/chat release task-7.md", ["release", "review", "task-7.md", "--as", "bob"]],
    ["/chat drop 7", ["release", "review", "7", "--as", "bob"]],
    ["/chat tasks", ["tasks", "review"]],
    ["/chat todo", ["tasks", "review"]],
    [
      "/chat task Write the docs",
      ["task", "add", "review", "--title", "Write the docs", "--as", "bob"],
    ],
    ["/chat add-task Docs", ["task", "add", "review", "--title", "Docs", "--as", "bob"]],
    ["/chat roster", ["roster", "review"]],
    ["/chat who", ["roster", "review"]],
    ["/chat channels", ["channels"]],
    ["/chat focus blog", ["ws", "focus", "blog", "--channel", "review"]],
    ["/chat cd blog", ["ws", "focus", "blog", "--channel", "review"]],
    ["/chat approve 12", ["approve", "review", "12", "--as", "bob"]],
    ["/chat ok 12 ship it", ["approve", "review", "12", "--as", "bob", "--note", "ship it"]],
    [
      "/chat reject 12 not yet",
      ["approve", "review", "12", "--as", "bob", "--reject", "--note", "not yet"],
    ],
    ["/chat veto #12", ["approve", "review", "12", "--as", "bob", "--veto"]],
    ["/chat pending", ["pending", "review"]],
    ["/chat govern", ["govern", "review"]],
    [
      "/chat request merge Merge PR 12",
      ["request", "review", "--as", "bob", "--action", "merge", "--title", "Merge PR 12"],
    ],
    [
      "/chat ask deploy Ship 1.4",
      ["request", "review", "--as", "bob", "--action", "deploy", "--title", "Ship 1.4"],
    ],
    ["/chat READ", ["read", "review", "--as", "bob"]],
  ];
  it.each(table)("%s → %j", (line, expected) => {
    expect(argv(line)).toEqual(expected);
  });

  it("every sub-command and alias is in the table above", () => {
    const covered = new Set(table.map(([line]) => line.split(/\s+/)[1]!.toLowerCase()));
    for (const verb of chatVerbs()) {
      for (const name of [verb.sub, ...verb.aliases]) expect(covered, name).toContain(name);
    }
  });

  it("without a caller, /chat lines leave --as to $AGENT_CHAT_NAME", () => {
    expect(argv("/chat claim 7", { channel: "review" })).toEqual(["claim", "review", "7"]);
  });

  it("a /chat line with no channel anywhere cannot become a command line", () => {
    expect(() => toCliArgs(command("/chat read"), {})).toThrow(/needs a channel/);
    expect(toCliArgs(command("/chat channels"), {})).toEqual(["channels"]);
    expect(toCliArgs(command("/chat focus blog"), {})).toEqual(["ws", "focus", "blog"]);
  });

  it.each([
    ["/chat", "needs a sub-command"],
    ["/chat frobnicate", 'unknown /chat sub-command "frobnicate"'],
    ["/chat claim", "/chat claim TASK"],
    ["/chat claim ../etc", "invalid task name"],
    ["/chat claim 7 8", 'takes no "8"'],
    ["/chat post", "needs text"],
    ["/chat post @bob", "needs text"],
    ["/chat reply x hi", "is not a message number"],
    ["/chat approve 0", "is not a message number"],
    ["/chat focus --root=/elsewhere", "is not a folder"],
    ["/chat peek many", "is not a count"],
    ["/chat wait soon", "is not seconds"],
    ["/chat read everything", 'takes "all"'],
    ["/chat read #../x", "invalid channel name"],
    ["/chat post @../x hi", "invalid agent name"],
    ["/chat request 'merge' title", "is not an action name"],
  ])("%j is refused with %j", (line, message) => {
    const parse = parseSlash(line);
    expect(parse.ok).toBe(false);
    if (!parse.ok) expect(parse.error).toContain(message);
  });
});

describe("slash lines in message bodies", () => {
  it("a body that starts with a known slash verb is parsed", () => {
    expect(slashOfBody("/chat claim task-3\nthanks")).toMatchObject({ ok: true });
    expect(slashOfBody("\n\n/b00t model ls")).toMatchObject({ ok: true });
    expect(slashOfBody("/chat frob")).toMatchObject({ ok: false, verb: "chat" });
  });

  it("other bodies are not slash commands", () => {
    expect(slashOfBody("/usr/bin is where it lives")).toBeUndefined();
    expect(slashOfBody("hello\n/chat read")).toBeUndefined();
    expect(slashOfBody("see /chat read")).toBeUndefined();
  });
});

describe("the --exec allowlist", () => {
  it.each([
    ["/chat read", ["chat"], true],
    ["/chat read", ["chat read"], true],
    ["/chat r", ["chat read"], true],
    ["/chat claim 7", ["chat read"], false],
    ["/chat read", [], false],
    ["/chat read", ["*"], true],
    ["/b00t model rm x", ["b00t model list"], false],
    ["/b00t model ls", ["b00t model list"], true],
    ["/b00t model rm x", ["b00t"], true],
    ["/b00t model rm x", ["chat"], false],
    ["/chat read", ["  CHAT   Read "], true],
    ["/chat read", ["cha"], false],
  ] as const)("%s with %j → %s", (line, list, allowed) => {
    expect(isAllowed(command(line), list)).toBe(allowed);
  });

  it("reads slash.exec from a config document and refuses bad shapes clearly", () => {
    expect(slashAllowlist({ slash: { exec: ["chat read"] } }, "c.json")).toEqual(["chat read"]);
    expect(slashAllowlist({}, "c.json")).toEqual([]);
    expect(() => slashAllowlist({ slash: { exec: "chat" } }, "c.json")).toThrow(
      /c.json: "slash.exec" must be a list/,
    );
    expect(() => slashAllowlist([], "c.json")).toThrow(/must be a JSON object/);
  });
});
