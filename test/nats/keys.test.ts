import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsStore } from "../../src/store/nats/index.js";
import { runCli } from "../helpers/cli.js";
import { NatsServer, natsSkipReason } from "../helpers/nats-server.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * Keys on a NATS root (docs/signatures.md): published in the namespace's KV, so that readers on
 * other machines pin them and follow rotations as they do on a folder root.
 */
describe.skipIf(natsSkipReason !== undefined)(
  `published keys on NATS${natsSkipReason ? ` (${natsSkipReason})` : ""}`,
  () => {
    let server: NatsServer;
    const tmp = tempDir("agent-chat-nats-keys-");
    let n = 0;
    beforeAll(async () => {
      server = await NatsServer.start();
    });
    afterAll(async () => {
      await server?.dispose();
      tmp.cleanup();
    });

    const user = (who: string) => ({
      XDG_CONFIG_HOME: join(tmp.dir, `${who}-${n}`),
      AGENT_CHAT_DAEMON: "off",
    });

    it("a rotation reaches readers through the KV; another key for the name is refused", async () => {
      n++;
      const root = server.url(`keys${n}`);
      const [alice, reader, mallory] = [user("alice"), user("reader"), user("mallory")];
      const cli = async (args: string[], env: Record<string, string>) => {
        const r = await runCli(args, { root, env });
        expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
        return r;
      };
      const trusts = async () => {
        const peek = await cli(["--json", "peek", "review", "-n", "10"], reader);
        return (JSON.parse(peek.stdout) as { messages: Array<{ trust: string }> }).messages.map(
          (m) => m.trust,
        );
      };
      await cli(["init", "review"], alice);
      const made = await cli(["--json", "id", "new", "--as", "alice"], alice);
      const first = (JSON.parse(made.stdout) as { key: string }).key;
      const shown = await cli(["--json", "id", "show", "alice"], reader);
      expect(JSON.parse(shown.stdout).published).toEqual([first]);

      await cli(["post", "review", "--from", "alice", "--body", "old key"], alice);
      expect(await trusts()).toEqual(["verified"]);
      await cli(["id", "rotate", "--as", "alice"], alice);
      await cli(["post", "review", "--from", "alice", "--body", "new key"], alice);
      expect(await trusts()).toEqual(["verified", "verified"]);

      const again = await runCli(["id", "new", "--as", "alice"], { root, env: mallory });
      expect(again.code).toBe(1);
      expect(again.stderr).toContain("already has a key");
      // Mallory publishes a key of her own for alice: the readers' pin wins.
      await cli(["id", "new", "--as", "alice", "--replace"], mallory);
      await cli(["post", "review", "--from", "alice", "--body", "mallory"], mallory);
      expect(await trusts()).toEqual(["verified", "verified", "forged"]);
      const read = await cli(["read", "review", "--as", "carol"], reader);
      expect(read.stderr).toContain("attempted key change for alice");
    }, 60_000);

    it("a key file is written only over the revision its writer read", async () => {
      n++;
      const store = await NatsStore.open(server.url(`keys${n}`));
      try {
        const keys = store.publishedKeys;
        expect(await keys.put("alice", "first", 0)).toBe(true);
        expect(await keys.put("alice", "second", 0)).toBe(false);
        const read = await keys.get("alice");
        expect(read?.text).toBe("first");
        expect(await keys.put("alice", "third", read!.revision)).toBe(true);
        expect(await keys.put("alice", "stale", read!.revision)).toBe(false);
        expect((await keys.get("alice"))?.text).toBe("third");
        expect(await keys.get("bob")).toBeUndefined();
      } finally {
        await store.close();
      }
    });
  },
);
