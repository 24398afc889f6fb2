import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentChatError } from "../../src/core/errors.js";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { tempDir } from "../helpers/tmp.js";
import { SIZES } from "./sizes.js";

const run = promisify(execFile);
const claimer = fileURLToPath(new URL("./workers/claimer.mjs", import.meta.url));

let tmp: ReturnType<typeof tempDir>;
beforeAll(() => {
  tmp = tempDir("agent-chat-claims-");
});
afterAll(() => tmp.cleanup());

describe("claims under contention", () => {
  it("many contenders × many tasks: exactly one winner per task; release by a non-holder refused", async () => {
    const store = new FsStore(tmp.dir);
    await store.init("work");
    const ids = Array.from({ length: SIZES.tasks }, (_, i) => String(i + 1));
    for (const id of ids) await store.addTask("work", { id, title: `task ${id}`, from: "lead" });

    const results = await Promise.all(
      Array.from({ length: SIZES.contenders }, (_, c) =>
        run(process.execPath, [claimer, tmp.dir, "work", `agent${c}`, ...ids], {
          timeout: 300_000,
        }).then((o) => ({ agent: `agent${c}`, won: JSON.parse(o.stdout) as string[] })),
      ),
    );
    const winners = new Map<string, string[]>();
    for (const { agent, won } of results) {
      for (const id of won) winners.set(id, [...(winners.get(id) ?? []), agent]);
    }
    for (const id of ids) expect(winners.get(id), `task ${id}`).toHaveLength(1);

    const tasks = await store.tasks("work");
    expect(tasks.every((t) => t.state === "claimed")).toBe(true);
    for (const t of tasks) expect(t.holder).toBe(winners.get(t.id)![0]);

    let refused = 0;
    for (const t of tasks) {
      const intruder = t.holder === "agent0" ? "agent1" : "agent0";
      const err = await store.release("work", t.id, intruder).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentChatError);
      expect((err as AgentChatError).code).toBe("NOT_HOLDER");
      refused++;
    }
    await store.close();
    console.log(
      `claims: ${SIZES.contenders} contenders × ${SIZES.tasks} tasks, ${ids.length} winners (one each), ` +
        `${refused} releases by non-holders refused`,
    );
  });
});
