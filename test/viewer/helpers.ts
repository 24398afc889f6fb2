import type { ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { request } from "node:http";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { startCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { requirePresent } from "../helpers/tools.js";

export const CHROMIUM = "/usr/bin/chromium";

/**
 * Headless Debian chromium as root: no sandbox, and no background connections to refuse. The
 * browser tests need it everywhere: without it they fail, saying so.
 */
export async function launchChromium() {
  requirePresent(`Chromium at ${CHROMIUM} (apt-get install chromium)`, existsSync(CHROMIUM));
  const { chromium } = await import("playwright-core");
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/**
 * For one describe block: a root written by `seed`, the viewer on it and headless Chromium,
 * started before its tests and stopped after them. Read the fields inside the tests.
 */
export function viewerOn(
  prefix: string,
  seed: (writer: FsStore) => Promise<void>,
): { view: RunningViewer; browser: Browser; get(path: string): Promise<RawResponse> } {
  const tmp = tempDir(prefix);
  const fixture = {
    get: (path: string) =>
      rawRequest(fixture.view.port, path, {
        headers: { Authorization: `Bearer ${fixture.view.token}` },
      }),
  } as { view: RunningViewer; browser: Browser; get(path: string): Promise<RawResponse> };
  beforeAll(async () => {
    const writer = new FsStore(tmp.dir);
    await seed(writer);
    await writer.close();
    fixture.view = await startView(tmp.dir);
    fixture.browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await fixture.browser?.close();
    await fixture.view?.stop();
    tmp.cleanup();
  });
  return fixture;
}

export interface RunningViewer {
  /** The page's address, `http://127.0.0.1:<port>/s/<token>/`. */
  url: string;
  token: string;
  /** The secret path the page and its API live under, `/s/<token>` (no last slash). */
  prefix: string;
  port: number;
  origin: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `agent-chat view` from the built CLI on a free port and reads its address. */
export async function startView(
  root: string,
  extraArgs: string[] = [],
  env: Record<string, string> = {},
): Promise<RunningViewer> {
  // The viewer lives as long as its test file; a loaded machine can take a while to get there.
  const child = startCli(["--json", "view", "--http", "127.0.0.1:0", ...extraArgs], {
    root,
    env,
    timeoutMs: 600_000,
  });
  const info = await new Promise<{ url: string; token: string }>((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      const line = out.split("\n")[0];
      if (out.includes("\n") && line) resolve(JSON.parse(line));
    });
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      err += d;
    });
    child.on("exit", (code) => reject(new Error(`view exited ${code}: ${err}`)));
  });
  const url = new URL(info.url);
  return {
    url: info.url,
    token: info.token,
    prefix: url.pathname.replace(/\/$/, ""),
    port: Number(url.port),
    origin: url.origin,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGINT");
      }),
  };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A plain HTTP request with exactly the headers given (Host and Origin included). */
export function rawRequest(
  port: number,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawResponse> {
  const headers: Record<string, string> = { Host: `127.0.0.1:${port}`, ...options.headers };
  // An empty Host means none at all (HTTP/1.0 style), which Node would otherwise fill in.
  const setHost = headers.Host !== "";
  if (!setHost) delete headers.Host;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: options.method ?? "GET",
        agent: false,
        setHost,
        headers,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          body += d;
          // An event stream never ends: its first bytes are enough.
          if (String(res.headers["content-type"]).startsWith("text/event-stream")) {
            res.destroy();
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
          }
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/** Frontmatter of a message file as `key: value` pairs (split at the first colon). */
export function frontmatter(text: string): Record<string, string> {
  const lines = text.split("\n");
  const out: Record<string, string> = {};
  for (const line of lines.slice(1, lines.indexOf("---", 1))) {
    const colon = line.indexOf(":");
    out[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return out;
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? Number.NaN;
}

/**
 * A conversation as agents and people write it. Written through the library (the same files the
 * CLI writes; spawning the CLI two dozen times would make this file slow), read by the viewer
 * from disk.
 */
export async function seedConversation(root: string): Promise<void> {
  const store = new FsStore(root);
  try {
    await store.init("review", {
      members: ["alice", "bob", "carol"],
      topic: "Schema v2 of the message index",
    });
    await store.init("deploy", { topic: "Friday release of the daemon" });
    await store.post("review", {
      from: "alice",
      to: "bob,carol",
      status: "proposal",
      title: "Draft of schema v2",
      body: "The draft is in `docs/schema.md`. What changes:\n\n- `reply_to` becomes a number, never a list\n- the `thread` field goes away\n- **cursors** stay one file per agent\n\nCan you both look before noon?",
    });
    await store.post("review", {
      from: "bob",
      to: "alice",
      replyTo: 1,
      status: "question",
      title: "Re: Draft of schema v2",
      body: "Why drop `thread`? Two tools still read it:\n\n```\ngrep -r 'thread:' tools/\n```",
    });
    await store.post("review", {
      from: "alice",
      to: "bob",
      replyTo: 2,
      title: "Re: Draft of schema v2",
      body: "Both only print it. I will patch them in the same PR, see https://example.com/pr/12.",
    });
    await store.read("review", { as: "bob" });
    await store.post("review", {
      from: "carol",
      replyTo: 1,
      status: "ack",
      title: "Looks good to me",
      body: "> cursors stay one file per agent\n\nAgreed, that keeps `chat.py` compatible. Approving.",
    });
    await store.addTask("review", { title: "Patch the two thread readers", from: "alice" });
    await store.addTask("review", { title: "Update docs/schema.md examples", from: "alice" });
    await store.claim("review", "1", "bob");
    await store.post("deploy", {
      from: "carol",
      title: "Release checklist",
      body: "1. tag\n2. build\n3. announce",
    });
  } finally {
    await store.close();
  }
}
