import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { tempDir } from "../helpers/tmp.js";
import { type RunningViewer, startView } from "./helpers.js";

/** The viewer's resident memory in MB, from /proc (Linux). */
function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) / 1024;
}

interface StreamClient {
  socket: Socket;
  /** HTTP status of the answer (0 until the head arrived). */
  status: number;
  /** Seqs of the `message` events read so far. */
  seqs: number[];
  states: number;
  bytes: number;
  closed: boolean;
}

/**
 * Opens `/api/events` over a plain socket. A client that does not read pauses its socket before
 * the answer arrives, so everything the server sends piles up: first in the kernel's buffers,
 * then in the server, unless the server stops.
 */
function openStream(view: RunningViewer, read: boolean | "head"): Promise<StreamClient> {
  const socket = connect(view.port, "127.0.0.1");
  const client: StreamClient = { socket, status: 0, seqs: [], states: 0, bytes: 0, closed: false };
  socket.on("close", () => {
    client.closed = true;
  });
  socket.on("error", () => {});
  let text = "";
  socket.setEncoding("utf8");
  socket.on("data", (d: string) => {
    client.bytes += d.length;
    text += d;
    if (client.status === 0) {
      const head = text.indexOf("\r\n\r\n");
      if (head < 0) return;
      client.status = Number(text.slice(9, 12));
      text = text.slice(head + 4);
      if (read === "head") socket.pause();
    }
    // Chunked encoding: count events by their lines, the chunk sizes are lines of their own.
    let end = text.indexOf("\n\n");
    while (end >= 0) {
      const event = text.slice(0, end);
      text = text.slice(end + 2);
      if (event.includes("event: state")) client.states += 1;
      const seq =
        /event: message\r?\n(?:[0-9a-f]+\r\n)?data: \{"channel":"busy","message":\{"seq":(\d+)/.exec(
          event,
        );
      if (seq) client.seqs.push(Number(seq[1]));
      end = text.indexOf("\n\n");
    }
  });
  return new Promise((resolve) => {
    socket.once("connect", () => {
      if (!read) socket.pause();
      socket.write(
        `GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:${view.port}\r\nAuthorization: Bearer ${view.token}\r\n\r\n`,
      );
      resolve(client);
    });
  });
}

describe("viewer event streams and readers that do not read", () => {
  const tmp = tempDir("agent-chat-viewer-streams-");
  let view: RunningViewer;
  let writer: FsStore;

  beforeAll(async () => {
    writer = new FsStore(tmp.dir);
    await writer.init("busy", { topic: "big posts" });
    view = await startView(tmp.dir);
  });
  afterAll(async () => {
    await view?.stop();
    await writer?.close();
    tmp.cleanup();
  });

  it("closes a stream that stopped reading; memory stays bounded; a reader gets every message", async () => {
    const POSTS = 40;
    const big = (i: number) => `${String(i).padStart(6, "0")} ${"x".repeat(1_000_000)}`;
    const pid = view.child.pid!;
    const reader = await openStream(view, true);
    const stalled = await openStream(view, false);
    await expect.poll(() => reader.states, { timeout: 10_000 }).toBeGreaterThan(0);
    const before = rssMb(pid);
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(pid));
    }, 20);
    try {
      // A reader that keeps pace with the traffic: each post is read before the next is made.
      for (let i = 0; i < POSTS; i += 1) {
        await writer.post("busy", { from: "p", body: big(i) });
        await expect.poll(() => reader.seqs.length, { timeout: 20_000 }).toBeGreaterThan(i);
      }
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, rssMb(pid));
    expect(reader.seqs).toEqual(Array.from({ length: POSTS }, (_, k) => k + 1));
    expect(reader.closed).toBe(false);
    // The viewer keeps every message it showed (≈ the posted bytes); what it holds back for a
    // client that does not read is bounded by the stream budget, not by the traffic.
    const postedMb = (POSTS * big(0).length) / (1024 * 1024);
    const boundMb = 80 + 2 * postedMb;
    expect(peak - before, `RSS ${before.toFixed(0)} → ${peak.toFixed(0)} MB`).toBeLessThan(boundMb);

    // The stalled client was cut off: once it reads, its stream ends without the later messages.
    stalled.socket.resume();
    await expect.poll(() => stalled.closed, { timeout: 20_000 }).toBe(true);
    expect(stalled.seqs.length).toBeLessThan(POSTS);
  }, 120_000);
});

describe("viewer event streams: hundreds of clients", () => {
  const tmp = tempDir("agent-chat-viewer-streams-many-");
  let view: RunningViewer;
  let writer: FsStore;
  const clients: StreamClient[] = [];

  beforeAll(async () => {
    writer = new FsStore(tmp.dir);
    await writer.init("busy", { topic: "many readers" });
    view = await startView(tmp.dir);
  });
  afterAll(async () => {
    for (const c of clients) c.socket.destroy();
    await view?.stop();
    await writer?.close();
    tmp.cleanup();
  });

  it("refuses streams past the limit with 503 and keeps memory bounded however many do not read", async () => {
    const POSTS = 20;
    const big = (i: number) => `${String(i).padStart(6, "0")} ${"y".repeat(1_000_000)}`;
    const pid = view.child.pid!;
    const reader = await openStream(view, true);
    await expect.poll(() => reader.states, { timeout: 10_000 }).toBeGreaterThan(0);
    for (let i = 0; i < 250; i += 1) clients.push(await openStream(view, "head"));
    await expect
      .poll(() => clients.filter((c) => c.status === 0).length, { timeout: 10_000 })
      .toBe(0);
    const ok = clients.filter((c) => c.status === 200).length;
    expect(ok).toBe(99); // the reader holds one of the 100 streams
    expect(clients.filter((c) => c.status === 503)).toHaveLength(250 - ok);

    const before = rssMb(pid);
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(pid));
    }, 20);
    try {
      for (let i = 0; i < POSTS; i += 1) {
        await writer.post("busy", { from: "p", body: big(i) });
        await expect.poll(() => reader.seqs.length, { timeout: 20_000 }).toBeGreaterThan(i);
      }
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, rssMb(pid));
    expect(reader.seqs).toEqual(Array.from({ length: POSTS }, (_, k) => k + 1));
    const postedMb = (POSTS * big(0).length) / (1024 * 1024);
    expect(peak - before, `RSS ${before.toFixed(0)} → ${peak.toFixed(0)} MB`).toBeLessThan(
      80 + 2 * postedMb,
    );
    // Streams that fell behind were closed, so a new client gets a stream again.
    const late = await openStream(view, true);
    clients.push(late);
    await expect.poll(() => late.status, { timeout: 10_000 }).not.toBe(0);
    expect(late.status).toBe(200);
  }, 120_000);
});
