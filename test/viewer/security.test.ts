import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { startViewer } from "../../src/viewer/server.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { type RunningViewer, rawRequest, startView } from "./helpers.js";

describe("viewer security (agent-chat view over real HTTP)", () => {
  const tmp = tempDir("agent-chat-viewer-sec-");
  let view: RunningViewer;

  beforeAll(async () => {
    expect(
      (await runCli(["init", "review", "--members", "alice,bob"], { root: tmp.dir })).code,
    ).toBe(0);
    view = await startView(tmp.dir);
  });
  afterAll(async () => {
    await view?.stop();
    tmp.cleanup();
  });

  const messageFiles = () => readdirSync(join(tmp.dir, "review")).filter((f) => /^\d+-/.test(f));
  /** A POST of a message, at the secret address unless told otherwise. */
  const post = (
    headers: Record<string, string>,
    body = { from: "dana", body: "hello" },
    prefix = view.prefix,
  ) =>
    rawRequest(view.port, `${prefix}/api/channels/review/messages`, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...headers },
      body: JSON.stringify(body),
    });

  it("prints a loopback URL whose path holds a long random token", () => {
    expect(view.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/s\/[A-Za-z0-9_-]{43}\/$/);
    expect(view.url).toContain(`/s/${view.token}/`);
  });

  it("answers nothing outside its secret path without the token", async () => {
    for (const path of ["/", "/index.html", "/app.js", "/app.css", "/api/state", "/api/events"]) {
      const res = await rawRequest(view.port, path);
      expect(res.status, path).toBe(404);
      expect(res.body).not.toContain("agent-chat</title>");
    }
    // The old address, with the token as a query, no longer opens anything.
    expect((await rawRequest(view.port, `/?token=${view.token}`)).status).toBe(404);
    expect((await post({ Origin: view.origin }, undefined, "")).status).toBe(404);
    expect(messageFiles()).toEqual([]);
  });

  it("refuses a wrong token, in the path, a cookie or a header", async () => {
    const wrong = `${view.token.slice(0, -1)}${view.token.endsWith("A") ? "B" : "A"}`;
    for (const secret of [wrong, view.token.slice(0, -1), `${view.token}A`, ""]) {
      for (const rest of ["/", "/api/state"]) {
        expect((await rawRequest(view.port, `/s/${secret}${rest}`)).status, secret).toBe(404);
      }
    }
    const cookie = `agent_chat_viewer_${view.port}=${view.token}`;
    expect(
      (await rawRequest(view.port, "/api/state", { headers: { Cookie: cookie } })).status,
    ).toBe(404);
    expect(
      (await rawRequest(view.port, "/api/state", { headers: { Authorization: `Bearer ${wrong}` } }))
        .status,
    ).toBe(404);
  });

  it("serves the page and its API under /s/<token>/, sets no cookie, and takes a bearer header", async () => {
    const page = await rawRequest(view.port, `${view.prefix}/`);
    expect(page.status).toBe(200);
    expect(page.body).toContain("agent-chat</title>");
    expect(page.headers["set-cookie"]).toBeUndefined();
    const bare = await rawRequest(view.port, view.prefix);
    expect(bare.status).toBe(308);
    expect(bare.headers.location).toBe(`${view.prefix}/`);
    expect((await rawRequest(view.port, `${view.prefix}/app.js`)).status).toBe(200);
    const state = await rawRequest(view.port, `${view.prefix}/api/state`);
    expect(state.status).toBe(200);
    expect(state.headers["set-cookie"]).toBeUndefined();
    expect(JSON.parse(state.body).channels.map((c: { name: string }) => c.name)).toEqual([
      "review",
    ]);
    const bearer = await rawRequest(view.port, "/api/state", {
      headers: { Authorization: `Bearer ${view.token}` },
    });
    expect(bearer.status).toBe(200);
  });

  it("sends a strict Content-Security-Policy and no-sniff, no-frame headers", async () => {
    const res = await rawRequest(view.port, `${view.prefix}/`);
    expect(res.status).toBe(200);
    const csp = String(res.headers["content-security-policy"]);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    expect(res.headers["x-frame-options"]).toBe("DENY");
    // The secret address must not leave with a link followed from the page.
    expect(res.headers["referrer-policy"]).toBe("no-referrer");
    // The page itself carries no inline script for the policy to have to allow.
    expect(res.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  });

  it("refuses a DNS-rebinding Host header even with a valid token", async () => {
    const state = `${view.prefix}/api/state`;
    for (const host of [
      `evil.example:${view.port}`,
      `127.0.0.1.evil.example:${view.port}`,
      `localhost:${view.port + 1}`,
    ]) {
      const res = await rawRequest(view.port, state, { headers: { Host: host } });
      expect(res.status, host).toBe(403);
    }
    // No Host at all: Node's HTTP server already answers 400 Bad Request.
    const hostless = await rawRequest(view.port, state, { headers: { Host: "" } });
    expect([400, 403]).toContain(hostless.status);
    const page = await rawRequest(view.port, `${view.prefix}/`, {
      headers: { Host: `attacker.test:${view.port}` },
    });
    expect(page.status).toBe(403);
    expect(page.body).not.toContain("agent-chat</title>");
    // Loopback names of this port are accepted.
    for (const host of [`localhost:${view.port}`, `[::1]:${view.port}`]) {
      const res = await rawRequest(view.port, state, { headers: { Host: host } });
      expect(res.status, host).toBe(200);
    }
  });

  it("refuses a POST at the secret address from another origin, or with no origin", async () => {
    const before = messageFiles();
    expect((await post({ Origin: "http://evil.example" })).status).toBe(403);
    expect((await post({ Origin: `http://127.0.0.1:${view.port + 1}` })).status).toBe(403);
    expect((await post({})).status).toBe(403);
    expect((await post({ Origin: view.origin, "Sec-Fetch-Site": "cross-site" })).status).toBe(403);
    // A classic cross-site form post cannot send JSON.
    const form = await rawRequest(view.port, `${view.prefix}/api/channels/review/messages`, {
      method: "POST",
      headers: { Origin: view.origin, "Content-Type": "application/x-www-form-urlencoded" },
      body: "from=dana&body=hi",
    });
    expect(form.status).toBe(415);
    expect(messageFiles()).toEqual(before);
  });

  it("accepts a same-origin POST and reports validation errors as JSON", async () => {
    const ok = await post({ Origin: view.origin });
    expect(ok.status).toBe(201);
    expect(JSON.parse(ok.body)).toMatchObject({ seq: 1, channel: "review" });
    const scripted = await post(
      { Authorization: `Bearer ${view.token}` },
      { from: "dana", body: "from a script" },
      "",
    );
    expect(scripted.status).toBe(201);
    const bad = await post({ Origin: view.origin }, { from: "not a name!", body: "x" });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).error).toMatchObject({ code: "INVALID_NAME" });
    const empty = await post({ Origin: view.origin }, { from: "dana", body: "" });
    expect(JSON.parse(empty.body).error.message).toMatch(/body is required/);
    const missing = await rawRequest(view.port, `${view.prefix}/api/channels/nope/messages`);
    expect(missing.status).toBe(404);
    expect(messageFiles()).toHaveLength(2);
  });

  it("refuses a non-loopback address without the explicit flag", async () => {
    const res = await runCli(["view", "--http", "0.0.0.0:0"], { root: tmp.dir });
    expect(res.code).toBe(64);
    expect(res.stderr).toMatch(/not a loopback address.*--http-allow-remote/);
  });

  it("still needs the token when remote access is allowed", async () => {
    const remote = await startView(tmp.dir, ["--http", "0.0.0.0:0", "--http-allow-remote"]);
    try {
      expect((await rawRequest(remote.port, "/api/state")).status).toBe(404);
      const ok = await rawRequest(remote.port, "/api/state", {
        headers: { Authorization: `Bearer ${remote.token}` },
      });
      expect(ok.status).toBe(200);
    } finally {
      await remote.stop();
    }
  });
});

describe("startViewer (the library call behind agent-chat serve --http)", () => {
  it("uses the given token, serves on the given port and releases it on close", async () => {
    const tmp = tempDir("agent-chat-viewer-lib-");
    const store = new FsStore(tmp.dir);
    try {
      const token = "a-token-chosen-by-the-caller";
      const viewer = await startViewer({ store, port: 0, token });
      expect(viewer.token).toBe(token);
      const port = Number(new URL(viewer.url).port);
      expect(viewer.url).toBe(`http://127.0.0.1:${port}/s/${token}/`);
      const res = await rawRequest(port, "/api/state", {
        headers: { Authorization: `Bearer ${token}` },
      });
      expect(JSON.parse(res.body)).toEqual({ root: tmp.dir, channels: [] });
      await viewer.close();
      await expect(rawRequest(port, "/api/state")).rejects.toThrow(/ECONNREFUSED/);
      await expect(startViewer({ store, port: 0, token: "short" })).rejects.toThrow(/at least 16/);
      await expect(startViewer({ store, host: "192.0.2.1", port: 0 })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
    } finally {
      await store.close();
      tmp.cleanup();
    }
  });
});
