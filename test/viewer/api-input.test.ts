import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { startViewer, type Viewer } from "../../src/viewer/server.js";
import { tempDir } from "../helpers/tmp.js";
import { rawRequest } from "./helpers.js";

const TOKEN = "api-input-test-token-0123456789";

/**
 * Everything in a request to the viewer's API is checked before use: a malformed path or a
 * number written any other way than plain decimal digits is a 400 that says what is wrong,
 * never a 500 and never a guess (`1e3` is not 1000).
 */
describe("viewer API input", () => {
  const tmp = tempDir("agent-chat-viewer-input-");
  let store: FsStore;
  let viewer: Viewer;
  let port: number;
  const auth = { Authorization: `Bearer ${TOKEN}` };

  beforeAll(async () => {
    store = new FsStore(tmp.dir);
    await store.init("review", { topic: "input" });
    for (let i = 1; i <= 3; i += 1) await store.post("review", { from: "alice", body: `m${i}` });
    viewer = await startViewer({ store, port: 0, token: TOKEN });
    port = Number(new URL(viewer.url).port);
  });
  afterAll(async () => {
    await viewer?.close();
    await store?.close();
    tmp.cleanup();
  });

  const get = (path: string) => rawRequest(port, path, { headers: auth });
  const post = (path: string, body: unknown) =>
    rawRequest(port, path, {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
  const error = (res: { body: string }) =>
    (JSON.parse(res.body) as { error: { code: string; message: string } }).error;
  const seqs = async () => (await store.peek("review", 100)).map((m) => m.seq);

  it("answers a malformed percent-encoding in any path part with 400, not 500", async () => {
    for (const res of [
      await get("/api/channels/%E0%A4%A/messages"),
      await post("/api/channels/%E0%A4%A/messages", { from: "dana", body: "x" }),
      await post("/api/channels/review/panels/%E0%A4%A/items/1/approve", { as: "dana" }),
      await post("/api/channels/review/panels/governance/items/%ZZ/approve", { as: "dana" }),
    ]) {
      expect(res.status, res.body).toBe(400);
      expect(error(res)).toMatchObject({ code: "INVALID_ARGUMENT" });
      expect(error(res).message).toMatch(/percent-encoding/);
    }
    expect(await seqs()).toEqual([1, 2, 3]);
  });

  it("refuses a reply number that is not a plain positive whole number", async () => {
    for (const replyTo of [
      "1e3",
      "1E0",
      "0x1",
      "+1",
      " 1",
      "1 ",
      "1.0",
      "1.5",
      "-1",
      "0",
      "Infinity",
      "9007199254740993",
      1.5,
      0,
      -2,
      1e21,
      true,
      [1],
      {},
    ]) {
      const res = await post("/api/channels/review/messages", {
        from: "dana",
        body: "reply",
        replyTo,
      });
      expect(res.status, `replyTo ${JSON.stringify(replyTo)}: ${res.body}`).toBe(400);
      expect(error(res).message).toMatch(/replyTo/);
    }
    expect(await seqs()).toEqual([1, 2, 3]);
    // A number or its decimal digits are accepted.
    expect(
      (await post("/api/channels/review/messages", { from: "d", body: "a", replyTo: 1 })).status,
    ).toBe(201);
    expect(
      (await post("/api/channels/review/messages", { from: "d", body: "b", replyTo: "2" })).status,
    ).toBe(201);
    const [, , , four, five] = await store.peek("review", 100);
    expect([four?.replyTo, five?.replyTo]).toEqual([1, 2]);
  });

  it("refuses fields of the wrong type and unknown fields in a posted message", async () => {
    for (const body of [
      { from: "dana", body: 42 },
      { from: ["dana"], body: "x" },
      { from: "dana", body: "x", title: { t: 1 } },
      { from: "dana", body: "x", to: 7 },
      { from: "dana", body: "x", status: false },
      { from: "dana", body: "x", reply_to: 1 },
    ]) {
      const res = await post("/api/channels/review/messages", body);
      expect(res.status, `${JSON.stringify(body)}: ${res.body}`).toBe(400);
      expect(error(res).code).toBe("INVALID_ARGUMENT");
    }
    const verdict = await post("/api/channels/review/panels/governance/items/1/approve", {
      as: 5,
    });
    expect(verdict.status).toBe(400);
    expect(await seqs()).toEqual([1, 2, 3, 4, 5]);
  });

  it("reads before and limit only as plain decimal numbers in range", async () => {
    for (const query of [
      "before=1e3",
      "before=0x10",
      "before=%2B2",
      "before=%202",
      "before=2.0",
      "before=0",
      "before=99999999999999999999",
      "before=",
      "limit=1e2",
      "limit=-1",
      "limit=0",
      "limit=1001",
      "limit=%201",
      "limit=Infinity",
    ]) {
      const res = await get(`/api/channels/review/messages?${query}`);
      expect(res.status, `${query}: ${res.body}`).toBe(400);
      expect(error(res).code).toBe("INVALID_ARGUMENT");
    }
    const page = JSON.parse((await get("/api/channels/review/messages?before=3&limit=1")).body);
    expect(page.messages.map((m: { seq: number }) => m.seq)).toEqual([2]);
  });
});
