import { expect, it } from "vitest";
import { ingestEnvelopes } from "../../src/store/nats/b00t.js";
import { NatsStore } from "../../src/store/nats/nats-store.js";
import { runCli } from "../helpers/cli.js";
import { describeNats } from "../helpers/describe-nats.js";

let counter = 0;
const ns = () => `send${process.pid}-${++counter}`;

/** `agent-chat send --transport nats`, whose envelope only a running bridge turns into a message. */
describeNats("send over NATS", (server) => {
  const send = (root: string, channel: string) =>
    runCli(["send", "--transport", "nats", "--channel", channel, "--message", "hello"], {
      root,
      env: { NATS_URL: undefined },
    });

  /** A bridge of `root`'s namespace, running until the returned stop is called. */
  async function bridgeOf(root: string, createChannels = true) {
    const store = await NatsStore.open(root);
    const ac = new AbortController();
    const running = ingestEnvelopes(store, { signal: ac.signal, createChannels });
    await store.nc.flush(); // the bridge's subscription is registered
    return {
      store,
      stop: async () => {
        ac.abort();
        await running;
        await store.close();
      },
    };
  }

  it("with no bridge running, refuses: nothing would keep the envelope", async () => {
    const r = await send(server().url(ns()), "review");
    expect(r).toMatchObject({ code: 1, stdout: "" });
    expect(r.stderr).toMatch(
      /^agent-chat: no bridge takes chat\.review on nats:\/\/127\.0\.0\.1:\d+, so nothing was sent .*agent-chat bridge/,
    );
  });

  it("with a bridge, says where the envelope was posted", async () => {
    const root = server().url(ns());
    const bridge = await bridgeOf(root);
    try {
      const r = await send(root, "review");
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^posted #1 to review in send\d+-\d+ \(bridged from chat\.review/);
      expect(await bridge.store.peek("review", 5)).toMatchObject([{ body: "hello" }]);
    } finally {
      await bridge.stop();
    }
  });

  it("a bridge that refuses the envelope says why, and send fails", async () => {
    const root = server().url(ns());
    const bridge = await bridgeOf(root, false);
    try {
      const r = await send(root, "nowhere");
      expect(r.code).toBe(64);
      expect(r.stderr).toMatch(/^agent-chat: the bridge refused the envelope: CHANNEL_NOT_FOUND: /);
    } finally {
      await bridge.stop();
    }
  });
});
