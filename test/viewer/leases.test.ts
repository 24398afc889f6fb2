import { afterEach, beforeEach, expect, it } from "vitest";
import { FsStore } from "../../src/store/fs/fs-store.js";
import { ViewerModel } from "../../src/viewer/model.js";
import { tempDir } from "../helpers/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let store: FsStore;
beforeEach(() => {
  tmp = tempDir();
  store = new FsStore(tmp.dir);
});
afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

it("the viewer's state shows each task lease and live path lease with its token and end", async () => {
  await store.init("review");
  await store.addTask("review", { id: "1", title: "ship", from: "lead" });
  const claimed = await store.claim("review", "1", "bob");
  const lease = await store.addPathLease("review", "src/**", "bob", { reason: "core" });
  await store.addPathLease("review", "docs/**", "carol", { ttlMs: 1000 });
  await store.releasePathLease("review", "docs/**", "carol");
  const model = new ViewerModel(store, []);
  try {
    const [channel] = (await model.state()).channels;
    expect(channel!.tasks).toEqual([
      {
        id: "1",
        state: "claimed",
        holder: "bob",
        title: "ship",
        token: 1,
        expiresAt: claimed.expiresAt,
      },
    ]);
    expect(channel!.leases).toEqual([
      {
        token: 1,
        pattern: "src/**",
        holder: "bob",
        exclusive: true,
        expiresAt: lease.expiresAt,
        reason: "core",
      },
    ]);
  } finally {
    await model.close();
  }
});
