import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentChatError } from "../../src/core/errors.js";
import { NatsStore } from "../../src/store/nats/nats-store.js";
import type { CursorMove } from "../../src/store/shared/index.js";
import { aroundCursorWrites } from "../helpers/nats-cursors.js";
import { freePort, NatsServer, natsSkipReason } from "../helpers/nats-server.js";
import { waitParked } from "../helpers/parked.js";
import { skipName } from "../helpers/tools.js";

const POSTER = fileURLToPath(new URL("./fixtures/poster.mjs", import.meta.url));
let counter = 0;
/** The store's cursor save, called as a late or concurrent caller would. */
type SaveCursor = (channel: string, agent: string, move: CursorMove) => Promise<number | undefined>;
const ns = () => `t${process.pid}-${++counter}`;

async function codeOf(promise: Promise<unknown>): Promise<AgentChatError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AgentChatError);
  return err as AgentChatError;
}

function runPoster(url: string, channel: string, from: string, count: number) {
  const child: ChildProcess = spawn(process.execPath, [POSTER, url, channel, from, String(count)], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout?.setEncoding("utf8").on("data", (d: string) => {
    out += d;
  });
  child.stderr?.setEncoding("utf8").on("data", (d: string) => {
    err += d;
  });
  const ready = new Promise<void>((resolve) => {
    child.stdout?.on("data", () => {
      if (out.startsWith("ready\n")) resolve();
    });
  });
  const done = new Promise<number[]>((resolve, reject) => {
    child.on("close", (code) =>
      code === 0
        ? resolve(JSON.parse(out.slice("ready\n".length)) as number[])
        : reject(new Error(err)),
    );
  });
  return { child, ready, done };
}

describe.skipIf(natsSkipReason !== undefined)(
  `NATS store against a real nats-server${natsSkipReason ? ` (${natsSkipReason})` : ""}`,
  () => {
    let server: NatsServer;
    beforeAll(async () => {
      server = await NatsServer.start();
    });
    afterAll(async () => {
      await server?.dispose();
    });

    it("a cursor write that reaches the server late never moves the cursor back", async () => {
      const url = server.url(ns());
      const late = await NatsStore.open(url);
      const current = await NatsStore.open(url);
      try {
        await late.init("dev");
        for (let i = 0; i < 10; i++) await late.post("dev", { from: "alice", body: `m${i}` });
        await late.read("dev", { as: "bob", peek: true });
        await current.read("dev", { as: "bob" });
        // What a write sent before the freeze of a node and passed on after its thaw does.
        const late4 = (late as unknown as { saveCursor: SaveCursor }).saveCursor("dev", "bob", {
          from: 0,
          to: 4,
        });
        expect(await late4, "where the cursor is instead").toBe(10);
        expect(await current.cursor("dev", "bob")).toBe(10);
        expect((await current.read("dev", { as: "bob" })).messages).toEqual([]);
      } finally {
        await late.close();
        await current.close();
      }
    });

    it("two waits of one agent at once, in two processes, hand each message to one of them only", async () => {
      const url = server.url(ns());
      const poster = await NatsStore.open(url);
      const [a, b] = [await NatsStore.open(url), await NatsStore.open(url)];
      try {
        await poster.init("dev");
        await poster.post("dev", { from: "alice", to: "bob", body: "once" });
        // Each wait's cursor write waits until both waits have scanned and are about to write.
        let writing = 0;
        let bothScanned!: () => void;
        const both = new Promise<void>((resolve) => {
          bothScanned = resolve;
        });
        for (const store of [a, b]) {
          aroundCursorWrites(store, async (send) => {
            if (++writing === 2) bothScanned();
            await both;
            return send();
          });
        }
        const woken = await Promise.all(
          [a, b].map((store) =>
            store.wait(["dev"], { as: "bob", timeoutMs: 2_000 }).then(
              (r) => r.messages.map((m) => m.body).join(),
              (err: AgentChatError) => err.code,
            ),
          ),
        );
        expect(writing, "both waits scanned before either saved").toBe(2);
        expect(woken.sort()).toEqual(["TIMEOUT", "once"]);
      } finally {
        await Promise.all([poster.close(), a.close(), b.close()]);
      }
    });

    it("two operations of one store (a read beside a wait, in a daemon) never move a cursor back", async () => {
      const url = server.url(ns());
      const store = await NatsStore.open(url);
      try {
        await store.init("dev");
        await store.read("dev", { as: "bob", peek: true });
        const save = (from: number, to: number) =>
          (store as unknown as { saveCursor: SaveCursor }).saveCursor("dev", "bob", { from, to });
        expect(await save(0, 9), "the read, done first").toBeUndefined();
        // The wait, which had read the cursor before: told where the cursor is, to look again.
        expect(await save(0, 8)).toBe(9);
        expect(await store.cursor("dev", "bob")).toBe(9);
      } finally {
        await store.close();
      }
    });

    it("two processes posting 500 messages each at once get 1,000 gapless numbers", async () => {
      const url = server.url(ns());
      const setup = await NatsStore.open(url);
      await setup.init("race");
      const a = runPoster(url, "race", "alice", 500);
      const b = runPoster(url, "race", "bob", 500);
      // Both processes connect first, then go on the same signal.
      await Promise.all([a.ready, b.ready]);
      a.child.stdin?.end("go\n");
      b.child.stdin?.end("go\n");
      const seqs = [...(await a.done), ...(await b.done)].sort((x, y) => x - y);
      expect(seqs).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
      const all = await setup.read("race", { as: "carol", all: true, peek: true });
      expect(all.messages.map((m) => m.seq)).toEqual(seqs);
      expect(new Set(all.messages.map((m) => m.body)).size).toBe(1000);
      await setup.close();
    }, 20_000);

    it("16 concurrent claimers on 16 connections: exactly one winner", async () => {
      const url = server.url(ns());
      const stores = await Promise.all(Array.from({ length: 16 }, () => NatsStore.open(url)));
      await stores[0]!.init("work");
      await stores[0]!.addTask("work", { id: "42", title: "the task", from: "lead" });
      const results = await Promise.allSettled(
        stores.map((s, i) => s.claim("work", "task-42.md", `agent${i}`)),
      );
      const winners = results.filter((r) => r.status === "fulfilled");
      expect(winners).toHaveLength(1);
      for (const r of results) {
        if (r.status === "rejected") expect((r.reason as AgentChatError).code).toBe("CLAIM_LOST");
      }
      const [task] = await stores[5]!.tasks("work");
      expect(task?.holder).toBe(
        (winners[0] as PromiseFulfilledResult<{ holder: string }>).value.holder,
      );
      await Promise.all(stores.map((s) => s.close()));
    });

    it("a task value another client wrote as garbage hides no other task and is no task", async () => {
      const store = await NatsStore.open(server.url(ns()));
      await store.init("work");
      await store.addTask("work", { id: "1", title: "the real one", from: "lead" });
      const { Kvm } = await import("@nats-io/kv");
      const kv = await new Kvm(store.js).open(store.bucketName);
      await kv.put("task.work.2", "not json");
      await kv.put("task.work.3", JSON.stringify({ text: 42 }));
      await kv.put("task.work.4", JSON.stringify({ text: "t", holder: "../../etc" }));
      expect((await store.tasks("work")).map((t) => t.id)).toEqual(["1"]);
      await expect(store.claim("work", "2", "bob")).rejects.toMatchObject({
        code: "TASK_NOT_FOUND",
      });
      expect(await store.claim("work", "1", "bob")).toMatchObject({ holder: "bob", token: 1 });
      await store.close();
    });

    it("a waiter on one connection wakes when another connection posts", async () => {
      const url = server.url(ns());
      const waiter = await NatsStore.open(url);
      const poster = await NatsStore.open(url);
      await poster.init("ch");
      // Woken by the post, before its own timeout (NATS waits have no poll to fall back on).
      const waiting = waiter.wait(["ch"], { as: "bob", timeoutMs: 10_000 });
      await waitParked(poster, "ch", "bob");
      await poster.post("ch", { from: "alice", body: "wake up" });
      const r = await waiting;
      expect(r.messages.map((m) => m.body)).toEqual(["wake up"]);
      expect(await poster.cursor("ch", "bob")).toBe(1);
      await Promise.all([waiter.close(), poster.close()]);
    });

    it("a waiter survives a server restart and still gets the message, once", async () => {
      const url = server.url(ns());
      const waiter = await NatsStore.open(url);
      await waiter.init("ch");
      const watched: number[] = [];
      const ac = new AbortController();
      const watching = (async () => {
        for await (const m of waiter.watch(["ch"], { signal: ac.signal })) watched.push(m.seq);
      })();
      await (await NatsStore.open(url)).post("ch", { from: "alice", to: "carol", body: "before" });
      const waiting = waiter.wait(["ch"], { as: "bob", timeoutMs: 15_000 });
      // Once the wait is parked, so that it is the parked wait that must outlive the restart.
      await waitParked(waiter, "ch", "bob");
      await server.restart();
      const poster = await NatsStore.open(url);
      await poster.post("ch", { from: "alice", to: "bob", body: "after the restart" });
      const r = await waiting;
      expect(r.messages.map((m) => m.body)).toEqual(["after the restart"]);
      expect(r.cursors).toEqual({ ch: 2 });
      await poster.post("ch", { from: "alice", body: "third" });
      await expect.poll(() => watched.length, { timeout: 10_000, interval: 20 }).toBe(3);
      ac.abort();
      await watching;
      expect(watched).toEqual([1, 2, 3]);
      await Promise.all([waiter.close(), poster.close()]);
    }, 20_000);

    it("a post whose publish landed but whose answer timed out is acknowledged once, not stored twice", async () => {
      const url = server.url("frozen");
      const store = await NatsStore.open(url, { timeoutMs: 600 });
      await store.init("ch");
      await store.post("ch", { from: "alice", body: "before" });
      // The server freezes with the publish in its socket; the client gives up waiting for the
      // answer after 600 ms and sends the same publish again; on thawing the server stores the
      // first and must recognise the second as its duplicate.
      const posting = store.post("ch", { from: "alice", body: "during the freeze" });
      await server.freeze(900);
      expect((await posting).seq).toBe(2);
      const all = await store.read("ch", { as: "bob", all: true, peek: true });
      expect(all.messages.map((m) => [m.seq, m.body])).toEqual([
        [1, "before"],
        [2, "during the freeze"],
      ]);
      expect((await store.post("ch", { from: "alice", body: "after" })).seq).toBe(3);
      await store.close();
    });

    it("a stream deleted under us gives clear errors to posters and waiters, no hang", async () => {
      const url = server.url(ns());
      const store = await NatsStore.open(url);
      await store.init("ch");
      await store.post("ch", { from: "alice", body: "one" });
      const waiting = codeOf(store.wait(["ch"], { as: "alice", timeoutMs: 15_000 }));
      // Once the wait is parked, so that the deletion must reach a parked wait.
      await waitParked(store, "ch", "alice");
      const admin = await NatsStore.open(url);
      const { jetstreamManager } = await import("@nats-io/jetstream");
      await (await jetstreamManager(admin.nc)).streams.delete(store.streamName);
      // No hang: a wait that missed the deletion would end in its own TIMEOUT.
      const waitErr = await waiting;
      expect(waitErr.code).toBe("BACKEND_UNAVAILABLE");
      expect(waitErr.message).toMatch(/deleted/);
      const postErr = await codeOf(store.post("ch", { from: "alice", body: "two" }));
      expect(postErr.code).toBe("BACKEND_UNAVAILABLE");
      expect(postErr.message).toMatch(/deleted/);
      // A fresh connection is told the namespace is damaged rather than silently restarting at 1.
      const reopen = await codeOf(NatsStore.open(url));
      expect(reopen.code).toBe("BACKEND_UNAVAILABLE");
      expect(reopen.message).toMatch(/damaged/);
      await Promise.all([store.close(), admin.close()]);
    });

    it("an unreachable server fails fast with BACKEND_UNAVAILABLE", async () => {
      const port = await freePort();
      const t0 = performance.now();
      const err = await codeOf(NatsStore.open(`nats://127.0.0.1:${port}/x`, { timeoutMs: 60_000 }));
      expect(err.code).toBe("BACKEND_UNAVAILABLE");
      expect(err.message).toMatch(
        /cannot connect to nats:\/\/127\.0\.0\.1:\d+: connection refused/,
      );
      // Fast means not waiting out the 60 s timeout: 10 s is so generous that only a client
      // that retries a refused connection fails it, never a loaded machine.
      expect(performance.now() - t0).toBeLessThan(10_000);
    });

    it("a server without JetStream is named as such at once", async () => {
      const plain = await NatsServer.start({ jetstream: false });
      try {
        const err = await codeOf(NatsStore.open(plain.url("x")));
        expect(err.code).toBe("BACKEND_UNAVAILABLE");
        expect(err.message).toMatch(
          /JetStream is not enabled on nats:\/\/127\.0\.0\.1:\d+ \(start nats-server with -js\)/,
        );
      } finally {
        await plain.dispose();
      }
    });
  },
);

const AUTH = skipName("NATS store with user/password auth", natsSkipReason);
describe.skipIf(natsSkipReason !== undefined)(AUTH, () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await NatsServer.start({ user: "agent", pass: "s3cret-pw" });
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it("wrong credentials fail at once, and never show the password", async () => {
    const url = `nats://agent:wrong-pw@127.0.0.1:${server.port}/team`;
    const t0 = performance.now();
    const err = await codeOf(NatsStore.open(url, { timeoutMs: 60_000 }));
    expect(err.code).toBe("BACKEND_UNAVAILABLE");
    expect(err.message).toMatch(/authentication failed/);
    expect(err.message).not.toMatch(/wrong-pw/);
    // At once means not waiting out the 60 s timeout (10 s: only a retrying client fails).
    expect(performance.now() - t0).toBeLessThan(10_000);
    const none = await codeOf(NatsStore.open(server.url("team")));
    expect(none.message).toMatch(/authentication failed/);
  });

  it("right credentials from the URL or from options work; location hides them", async () => {
    const fromUrl = await NatsStore.open(`nats://agent:s3cret-pw@127.0.0.1:${server.port}/team`);
    expect(fromUrl.location).toBe(`nats://127.0.0.1:${server.port}/team`);
    await fromUrl.init("ch");
    const fromOptions = await NatsStore.open(server.url("team"), {
      user: "agent",
      pass: "s3cret-pw",
    });
    expect((await fromOptions.channels()).map((c) => c.name)).toEqual(["ch"]);
    await Promise.all([fromUrl.close(), fromOptions.close()]);
  });
});
