import { join } from "node:path";
import { DaemonClient } from "../src/daemon/client.js";
import { DaemonServer } from "../src/daemon/server.js";
import { FsStore } from "../src/store/fs/fs-store.js";
import { NatsStore } from "../src/store/nats/nats-store.js";
import type { Store } from "../src/store/types.js";
import { NatsServer, natsSkipReason } from "../test/helpers/nats-server.js";
import { type BenchModule, type Row, sample, stats } from "./lib.js";

/**
 * Leases per backend (folder store, daemon over its socket, NATS): the claim that grants a task
 * lease, the holder's renew with its token beside it, and a path lease (add, then release).
 */
const bench: BenchModule = {
  name: "leases",
  async run(ctx) {
    const n = ctx.quick ? 60 : 500;
    const rows: Row[] = [];
    const folderDir = ctx.tmp();
    rows.push(...(await backendRows("folder store", new FsStore(join(folderDir, "a")), n)));

    const daemonDir = ctx.tmp();
    const served = new FsStore(join(daemonDir, "root"));
    const daemon = new DaemonServer({ store: served, root: served.location, version: "bench" });
    const socket = join(daemonDir, "d.sock");
    await daemon.listen(socket);
    try {
      rows.push(...(await backendRows("daemon", await DaemonClient.connect(socket), n)));
    } finally {
      await daemon.close();
      await served.close();
    }

    if (natsSkipReason !== undefined) return rows;
    const server = await NatsServer.start();
    try {
      rows.push(...(await backendRows("nats store", await NatsStore.open(server.url("lb")), n)));
    } finally {
      await server.dispose();
    }
    return rows;
  },
};

export default bench;

async function backendRows(group: string, store: Store, n: number): Promise<Row[]> {
  try {
    await store.init("bench");
    const warm = Math.min(20, Math.ceil(n / 10));
    for (let i = 1; i <= n + warm; i++) {
      await store.addTask("bench", { id: String(i), title: `t${i}`, from: "lead" });
    }
    let next = 0;
    const claim = stats(await sample(n, () => store.claim("bench", String(++next), "bob")));
    const renew = stats(await sample(n, () => store.renew("bench", "1", "bob", { token: 1 })));
    let p = 0;
    const path = stats(
      await sample(n, async () => {
        const pattern = `src/p${++p}/**`;
        await store.addPathLease("bench", pattern, "bob");
        await store.releasePathLease("bench", pattern, "bob");
      }),
    );
    const claimBaseline = { name: `claim (${group})`, stats: claim };
    return [
      { group, figure: "claim (grants a lease and its token)", unit: "ms", stats: claim },
      {
        group,
        figure: "renew (holder, with its token)",
        unit: "ms",
        stats: renew,
        baseline: claimBaseline,
      },
      {
        group,
        figure: "path lease add + release",
        unit: "ms",
        stats: path,
        baseline: claimBaseline,
      },
    ];
  } finally {
    await store.close();
  }
}
