import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { B00tEnvelope } from "../../src/core/envelope.js";
import type { AgentChatError } from "../../src/core/errors.js";
import { ingestEnvelopes, publishEnvelope } from "../../src/store/nats/b00t.js";
import { NatsStore } from "../../src/store/nats/nats-store.js";
import { collect, startCli } from "../helpers/cli.js";
import { NatsServer, natsSkipReason } from "../helpers/nats-server.js";

let counter = 0;
const ns = () => `b${process.pid}-${++counter}`;

function envelope(channel: string, body: string, metadata?: Record<string, unknown>): B00tEnvelope {
  const e: B00tEnvelope = {
    channel,
    sender: "b00t-agent",
    body,
    timestamp: new Date().toISOString(),
  };
  if (metadata) e.metadata = metadata;
  return e;
}

/** How long an ingested envelope may take to show. */
const T = { timeout: 5_000, interval: 20 };

describe.skipIf(natsSkipReason !== undefined)(
  `b00t envelopes over NATS${natsSkipReason ? ` (${natsSkipReason})` : ""}`,
  () => {
    let server: NatsServer;
    beforeAll(async () => {
      server = await NatsServer.start();
    });
    afterAll(async () => {
      await server?.dispose();
    });

    it("publishEnvelope puts the envelope JSON on chat.<channel>", async () => {
      const { connect } = await import("@nats-io/transport-node");
      const nc = await connect({ servers: `127.0.0.1:${server.port}` });
      const sub = nc.subscribe("chat.>", { max: 1 });
      await nc.flush();
      const sent = envelope("general", "hello from b00t", { to: "bob" });
      await publishEnvelope(`nats://127.0.0.1:${server.port}`, sent);
      for await (const msg of sub) {
        expect(msg.subject).toBe("chat.general");
        expect(msg.json()).toEqual(sent);
      }
      await nc.close();
      await expect(
        publishEnvelope(`127.0.0.1:${server.port}`, { ...sent, timestamp: "yesterday" }),
      ).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    });

    it("two ingesters turn each envelope into exactly one ordinary message", async () => {
      const url = server.url(ns());
      const a = await NatsStore.open(url);
      const b = await NatsStore.open(url);
      await a.init("general");
      const ac = new AbortController();
      const rejected: string[] = [];
      const onRejected = (_s: string, e: AgentChatError) => rejected.push(e.message);
      const running = [
        ingestEnvelopes(a, { signal: ac.signal, onRejected }),
        ingestEnvelopes(b, { signal: ac.signal, onRejected }),
      ];
      // Each ingester subscribed before its first await; a flush of each connection returns once
      // the server has registered that subscription.
      await Promise.all([a.nc.flush(), b.nc.flush()]);
      const target = `nats://127.0.0.1:${server.port}`;
      for (let i = 1; i <= 10; i++) {
        await publishEnvelope(target, envelope("general", `note ${i}`));
      }
      await publishEnvelope(
        target,
        envelope("general", "to bob only", {
          to: "bob",
          title: "Heads up",
          status: "proposal",
          reply_to: 3,
          priority: "high",
        }),
      );
      await publishEnvelope(target, envelope("fresh", "new channel"));
      const reader = await NatsStore.open(url);
      await expect.poll(async () => (await reader.peek("general", 20)).length, T).toBe(11);
      const messages = (await reader.read("general", { as: "bob" })).messages;
      expect(messages.map((m) => m.seq)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
      // Two ingesters work in parallel, so envelopes published back to back may swap places;
      // each still becomes exactly one message.
      const notes = messages.filter((m) => m.body.startsWith("note ")).map((m) => m.body);
      expect(notes.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `note ${i + 1}`).sort());
      expect(messages.find((m) => m.body === "to bob only")).toMatchObject({
        from: "b00t-agent",
        to: "bob",
        title: "Heads up",
        status: "proposal",
        replyTo: 3,
        extra: { metadata: '{"priority":"high"}' },
      });
      await expect
        .poll(async () => (await reader.channels()).map((c) => c.name), T)
        .toContain("fresh");
      expect((await reader.peek("fresh", 5)).map((m) => m.body)).toEqual(["new channel"]);
      // b00t's free-form names: published and ingested on the channel they map to.
      await publishEnvelope(target, { ...envelope("Mission Delta", "spaced"), sender: "Ops Bot" });
      await expect.poll(async () => (await reader.peek("mission-delta", 5)).length, T).toBe(1);
      expect((await reader.peek("mission-delta", 5))[0]).toMatchObject({
        from: "ops-bot",
        extra: { display_name: "Ops Bot", b00t_channel: "Mission Delta" },
      });
      // A malformed envelope is reported and does not stop the ingester.
      const { connect } = await import("@nats-io/transport-node");
      const nc = await connect({ servers: `127.0.0.1:${server.port}` });
      nc.publish("chat.general", "not json");
      await nc.flush();
      await expect.poll(() => rejected.length, T).toBe(1);
      expect(rejected[0]).toMatch(/not JSON/);
      await publishEnvelope(target, envelope("general", "still running"));
      await expect
        .poll(async () => (await reader.peek("general", 1))[0]?.body, T)
        .toBe("still running");
      await nc.close();
      ac.abort();
      await Promise.all(running);
      await Promise.all([a.close(), b.close(), reader.close()]);
    });

    it("agent-chat bridge ingests envelopes until interrupted", async () => {
      const url = server.url(ns());
      const child = startCli(["--json", "bridge", url]);
      const result = collect(child);
      const reader = await NatsStore.open(url);
      // The bridge announces nothing on stdout in --json mode; wait until it has subscribed.
      await vi.waitFor(
        async () => {
          await publishEnvelope(`nats://127.0.0.1:${server.port}`, envelope("ops", "ping"));
          expect(await reader.channels()).not.toHaveLength(0);
        },
        { timeout: 10_000, interval: 100 },
      );
      child.kill("SIGINT");
      const r = await result;
      // Like `tail`, a bridge stopped with Ctrl-C has done its job: exit 0.
      expect(r.code).toBe(0);
      const first = JSON.parse(r.stdout.split("\n")[0]!);
      expect(first).toMatchObject({ channel: "ops", seq: 1 });
      await reader.close();
    });
  },
);
