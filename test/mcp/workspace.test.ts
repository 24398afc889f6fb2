import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import type { Message } from "../../src/core/message.js";
import { tempDir } from "../helpers/tmp.js";
import { type Agent, connectAgent, footerJson, initChannels } from "./client.js";

// One root and one server per identity for the whole file (spawning servers is the slow part);
// each test works in a channel of its own, so that no test sees another's workspace.
let root: string;
let cleanup: () => void;
let alice: Agent;
let bob: Agent;
let channels = 0;

/** A new channel (members alice and bob) for one test. */
async function freshChannel(): Promise<string> {
  const name = `ws${++channels}`;
  await initChannels(root, { [name]: ["alice", "bob"] });
  return name;
}

function kfile(update: string, clarify = "none", response = "acknowledge"): string {
  return `ResponseAction: ${response}\nUpdateAction: ${update}\nClarifyAction: ${clarify}\n`;
}

/** Every message of the channel, read with the library as a third party would. */
async function channelMessages(channel: string): Promise<Message[]> {
  const store = await openStore(root, { watch: false });
  try {
    return (await store.read(channel, { as: "auditor", all: true, peek: true })).messages;
  } finally {
    await store.close();
  }
}

const wsDir = (channel: string) => join(root, channel, "_workspace");
const CREATE_BLOG = kfile('create-folder([root]/[blog], "article about the protocol")');

beforeAll(async () => {
  ({ dir: root, cleanup } = tempDir("agent-chat-mcpws-"));
  [alice, bob] = await Promise.all([connectAgent(root, "alice"), connectAgent(root, "bob")]);
});

afterAll(async () => {
  await Promise.all([alice, bob].map((a) => a?.close().catch(() => {})));
  cleanup();
});

describe("chat_workspace", () => {
  it("is listed with a schema a model can follow, and tools/list stays within 2,500 tokens", async () => {
    const list = await alice.client.listTools();
    expect(list.tools.length).toBeLessThanOrEqual(8);
    const tool = list.tools.find((t) => t.name === "chat_workspace");
    expect(tool).toBeDefined();
    const schema = tool!.inputSchema as {
      properties: Record<string, { type?: string; enum?: string[]; description?: string }>;
      required?: string[];
    };
    expect(Object.keys(schema.properties).sort()).toEqual([
      "action",
      "channel",
      "content",
      "kfile",
      "request",
    ]);
    expect(schema.required).toEqual(["channel"]);
    expect(schema.properties.action!.enum).toEqual(["turn", "tree", "confirm"]);
    // The description teaches every UpdateAction's syntax: the model writes the K-file itself.
    for (const syntax of [
      'create-folder([parent]/[name], "description")',
      "focus-folder([f])",
      "delete-folder([f])",
      'store-file([f], "a.md")',
      'edit-file([f], "a.md", append|replace)',
    ]) {
      expect(tool!.description).toContain(syntax);
    }
    // The bench's measure (bench/mcp.ts): characters of the whole answer / 4.
    const tokens = Math.ceil(JSON.stringify(list).length / 4);
    expect(tokens).toBeLessThanOrEqual(2_500);
  });

  it("applies create-folder then focus-folder K-files and renders the tree with its focus", async () => {
    const ch = await freshChannel();
    const created = await alice.call("chat_workspace", { channel: ch, kfile: CREATE_BLOG });
    expect(created.isError).toBe(false);
    expect(created.text).toContain("Created [root]/[blog] — article about the protocol.");
    expect(created.text).toContain(
      "K-folder:\n[root]-shared workspace [focus]\n└── [blog]-article about the protocol\n",
    );
    expect(existsSync(join(wsDir(ch), "blog"))).toBe(true);

    const focused = await alice.call("chat_workspace", {
      channel: ch,
      kfile: kfile("focus-folder([blog])", "none", "discuss"),
      content: "The protocol has three steps.",
    });
    expect(focused.isError).toBe(false);
    expect(focused.text).toMatch(/^K-file:\nResponseAction: discuss\nUpdateAction: focus-folder/);
    expect(focused.text).toContain("Context: [root]/[blog] — article about the protocol (focus)");
    expect(focused.text).toContain("Concepts:\n- discuss: ");
    expect(focused.text).toContain(
      "Contents:\nFocus moved to [root]/[blog].\n\nThe protocol has three steps.",
    );
    expect(focused.text).toContain(
      "K-folder:\n[root]-shared workspace\n└── [blog]-article about the protocol [focus]\n",
    );
    // The recorded K-files and Responses come from others (alice, workspace): two are from workspace.
    expect(footerJson(focused.footer).chat.channels[ch]).toBe(2);
    expect(readFileSync(join(wsDir(ch), ".focus"), "utf8").trim()).toBe("blog");
    expect(readFileSync(join(wsDir(ch), ".kfile"), "utf8")).toBe(
      kfile("focus-folder([blog])", "none", "discuss"),
    );

    // Another agent sees the same tree and focus.
    const tree = await bob.call("chat_workspace", { channel: ch, action: "tree" });
    expect(tree.text).toBe(
      "Focus: [root]/[blog]\n[root]-shared workspace\n└── [blog]-article about the protocol [focus]",
    );
  });

  it("holds a delete-folder for confirmation, and a following confirm executes it", async () => {
    const ch = await freshChannel();
    await alice.call("chat_workspace", { channel: ch, kfile: CREATE_BLOG });
    const asked = await alice.call("chat_workspace", {
      channel: ch,
      kfile: kfile("delete-folder([blog])"),
    });
    expect(asked.isError).toBe(false);
    expect(asked.text).toContain("ClarifyAction: ask-confirmation");
    expect(asked.text).toContain("Delete [root]/[blog] with its 0 subfolders and 0 files?");
    expect(asked.text).toContain('call chat_workspace with action "confirm"');
    expect(existsSync(join(wsDir(ch), "blog"))).toBe(true);

    // Only the agent that was asked can confirm.
    const notBobs = await bob.call("chat_workspace", { channel: ch, action: "confirm" });
    expect(notBobs.text).toContain("Nothing is waiting for a confirmation");
    expect(existsSync(join(wsDir(ch), "blog"))).toBe(true);

    const confirmed = await alice.call("chat_workspace", { channel: ch, action: "confirm" });
    expect(confirmed.isError).toBe(false);
    expect(confirmed.text).toContain("UpdateAction: delete-folder([blog])\nClarifyAction: none");
    expect(confirmed.text).toContain("Deleted [root]/[blog] (0 subfolders and 0 files).");
    expect(confirmed.text).toContain("K-folder:\n[root]-shared workspace [focus]\n");
    expect(existsSync(join(wsDir(ch), "blog"))).toBe(false);
  });

  it("holds an overwrite too, and cancels what waits when the next turn is something else", async () => {
    const ch = await freshChannel();
    await alice.call("chat_workspace", { channel: ch, kfile: CREATE_BLOG });
    const store = kfile('store-file([blog], "a.md")');
    await alice.call("chat_workspace", { channel: ch, kfile: store, content: "one" });
    const over = await alice.call("chat_workspace", { channel: ch, kfile: store, content: "two" });
    expect(over.text).toContain("ClarifyAction: ask-confirmation");
    expect(over.text).toContain("Replace the existing [root]/[blog]/a.md?");
    expect(readFileSync(join(wsDir(ch), "blog", "a.md"), "utf8")).toBe("one\n");
    const del = await alice.call("chat_workspace", {
      channel: ch,
      kfile: kfile("delete-folder([blog])"),
    });
    expect(del.text).toContain('Cancelled the pending store-file([blog], "a.md"); nothing');
    const other = await alice.call("chat_workspace", {
      channel: ch,
      kfile: kfile("focus-folder([blog])"),
    });
    expect(other.text).toContain(
      "Cancelled the pending delete-folder([blog]); nothing was deleted.",
    );
    const late = await alice.call("chat_workspace", { channel: ch, action: "confirm" });
    expect(late.text).toContain("Nothing is waiting for a confirmation");
    expect(readFileSync(join(wsDir(ch), "blog", "a.md"), "utf8")).toBe("one\n");
  });

  it("answers a bad K-file, an escaping name and an unknown channel with isError and the footer", async () => {
    const ch = await freshChannel();
    const bad = await alice.call("chat_workspace", {
      channel: ch,
      kfile: "ResponseAction: talk\nUpdateAction: none\nClarifyAction: none\n",
    });
    expect(bad.isError).toBe(true);
    expect(bad.text).toMatch(
      /^Error INVALID_KFILE: K-file line 1: ResponseAction "talk" is not a label; allowed: discuss \| prove \| export \| acknowledge\nWhat to do: /,
    );
    expect(footerJson(bad.footer).chat.channels[ch]).toBeUndefined();

    const arity = await alice.call("chat_workspace", {
      channel: ch,
      kfile: kfile("move-folder([blog])"),
    });
    expect(arity.text).toMatch(
      /^Error INVALID_KFILE: K-file line 2: move-folder takes 2 argument\(s\), got 1/,
    );

    const escaping = await alice.call("chat_workspace", {
      channel: ch,
      kfile: kfile('create-folder([root]/[..], "up")'),
    });
    expect(escaping.isError).toBe(true);
    expect(escaping.text).toMatch(
      /^Error INVALID_KFILE: K-file line 2: invalid folder name "\.\."/,
    );
    expect(existsSync(join(root, ch, "up"))).toBe(false);

    const noChannel = await alice.call("chat_workspace", { channel: "nope", kfile: CREATE_BLOG });
    expect(noChannel.isError).toBe(true);
    expect(noChannel.text).toMatch(/^Error CHANNEL_NOT_FOUND: no channel nope/);
    expect(noChannel.footer).toMatch(/^<agent-chat>/);
    expect(existsSync(join(root, "nope"))).toBe(false);

    const neither = await alice.call("chat_workspace", { channel: ch });
    expect(neither.text).toMatch(/^Error INVALID_ARGUMENT: a turn needs kfile .* or request/);
    const both = await alice.call("chat_workspace", {
      channel: ch,
      action: "tree",
      kfile: CREATE_BLOG,
    });
    expect(both.text).toMatch(/^Error INVALID_ARGUMENT: action tree takes only channel/);

    // Refused turns leave no trace in the channel, and the server carries on.
    expect(await channelMessages(ch)).toEqual([]);
    expect((await alice.call("chat_workspace", { channel: ch, kfile: CREATE_BLOG })).isError).toBe(
      false,
    );
    expect(alice.stderr()).toBe("");
  });

  it("records each turn in the channel as messages under the agent's identity", async () => {
    const ch = await freshChannel();
    const applied = await alice.call("chat_workspace", { channel: ch, kfile: CREATE_BLOG });
    expect(applied.text).toMatch(new RegExp(`Recorded in ${ch} as #1, #2\\.$`));
    const asked = await alice.call("chat_workspace", {
      channel: ch,
      request: "focus on the blog folder",
    });
    expect(asked.text).toMatch(new RegExp(`Recorded in ${ch} as #3, #4, #5\\.$`));

    const [k1, r1, req, k2, r2] = await channelMessages(ch);
    expect(k1).toMatchObject({
      seq: 1,
      from: "alice",
      status: "kfile",
      body: CREATE_BLOG.trimEnd(),
    });
    expect(r1).toMatchObject({ seq: 2, from: "workspace", status: "response", replyTo: 1 });
    expect(r1!.body).toContain("Created [root]/[blog] — article about the protocol.");
    expect(r1!.body).toContain(
      "[root]-shared workspace [focus]\n└── [blog]-article about the protocol",
    );
    expect(req).toMatchObject({
      from: "alice",
      status: "request",
      body: "focus on the blog folder",
    });
    expect(k2).toMatchObject({ from: "workspace", status: "kfile", replyTo: 3 });
    expect(k2!.body).toBe(kfile("focus-folder([blog])").trimEnd());
    expect(r2).toMatchObject({ from: "workspace", status: "response", replyTo: 4 });

    // bob sees the turn as news in his footer, as any other message.
    const seen = await bob.call("chat_channels");
    expect(footerJson(seen.footer).chat.channels[ch]).toBe(5);
  });

  it("refuses a _workspace that is a link out of the root, and names what the tree cannot hold", async () => {
    const outside = `${root}-outside`;
    mkdirSync(join(outside, "photos"), { recursive: true });
    writeFileSync(join(outside, "photos", "beach.jpg"), "jpeg");
    const linked = await freshChannel();
    symlinkSync(outside, wsDir(linked));
    for (const args of [
      { channel: linked, action: "tree" },
      { channel: linked, kfile: kfile('create-folder([root]/[x], "planted")') },
      { channel: linked, kfile: kfile("delete-folder([photos])") },
      { channel: linked, action: "confirm" },
    ]) {
      const r = await alice.call("chat_workspace", args);
      expect(r.isError).toBe(true);
      expect(r.text).toMatch(
        /^Error UNSAFE_FILE: .*_workspace is a symbolic link; it is never followed/,
      );
    }
    expect(readdirSync(outside)).toEqual(["photos"]);
    expect(readdirSync(join(outside, "photos"))).toEqual(["beach.jpg"]);
    rmSync(outside, { recursive: true });

    const ch = await freshChannel();
    await alice.call("chat_workspace", { channel: ch, kfile: CREATE_BLOG });
    mkdirSync(join(wsDir(ch), "c++"));
    const tree = await alice.call("chat_workspace", { channel: ch, action: "tree" });
    expect(tree.isError).toBe(false);
    expect(tree.text).toBe(
      "Focus: [root]\n[root]-shared workspace [focus]\n└── [blog]-article about the protocol\n" +
        "Not shown: workspace entry c++ is not a valid folder name (use ASCII letters, digits, '.', '_' and '-', starting with a letter or digit (nothing may leave the workspace)); skipped",
    );
  });
});
