import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createIdentity } from "../../src/features/trust/identity.js";
import { tempDir } from "../helpers/tmp.js";
import { agentFixture } from "./client.js";

const fixture = agentFixture();
/** The agents' config folders, outside the root (keys never live in it). */
let configs: ReturnType<typeof tempDir>;
beforeEach(() => {
  configs = tempDir("agent-chat-config-");
});
afterEach(() => configs.cleanup());

describe("agent-chat mcp --as A: the session's identity", () => {
  it("signs as A when A's key is here; readers see (verified), and (FORGED) once it is edited", async () => {
    const root = fixture.root();
    const config = configs.dir;
    await createIdentity(
      { configDir: join(config, "agent-chat"), root, rootId: resolve(root) },
      "alice",
    );
    const env = { XDG_CONFIG_HOME: config, AGENT_CHAT_DAEMON: "off" };
    const alice = await fixture.agent("alice", [], env);
    const bob = await fixture.agent("bob", [], { AGENT_CHAT_DAEMON: "off" });
    const posted = await alice.call("chat_post", { channel: "review", body: "ship it" });
    expect(posted.isError, posted.text).toBe(false);
    const file = join(
      root,
      "review",
      readdirSync(join(root, "review")).find((n) => n.startsWith("0001-"))!,
    );
    expect(readFileSync(file, "utf8")).toContain("\nsig: ed25519:");

    const read = await bob.call("chat_read", { channel: "review", peek: true });
    expect(read.text).toContain("from alice (verified)");
    writeFileSync(file, readFileSync(file, "utf8").replace("ship it", "delete it"));
    const again = await bob.call("chat_read", { channel: "review", peek: true });
    expect(again.text).toContain("from alice (FORGED: the signature does not match the message)");
  });
});
