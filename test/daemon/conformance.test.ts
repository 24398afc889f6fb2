import { join } from "node:path";
import { openStore } from "../../src/client/open.js";
import { DaemonClient } from "../../src/daemon/client.js";
import { DaemonServer } from "../../src/daemon/server.js";
import { storeConformance } from "../conformance/suite.js";
import { tempDir } from "../helpers/tmp.js";

// The Store contract through the daemon: every `open()` is a new socket connection to one
// daemon (in this process, on a real Unix socket) that owns a folder store.
storeConformance("daemon client", async (now) => {
  const tmp = tempDir();
  const store = await openStore(join(tmp.dir, "root"), { now });
  const daemon = new DaemonServer({ store, root: store.location, version: "test" });
  const socket = join(tmp.dir, "run", "d.sock");
  await daemon.listen(socket);
  return {
    open: () => DaemonClient.connect(socket),
    local: () => openStore(join(tmp.dir, "root"), { now }),
    cleanup: async () => {
      await daemon.close();
      await store.close();
      tmp.cleanup();
    },
  };
});
