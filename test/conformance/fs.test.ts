import { openStore } from "../../src/client/open.js";
import { tempDir } from "../helpers/tmp.js";
import { storeConformance } from "./suite.js";

// Opened as every caller opens a root (openStore), so the suite covers what sits above the
// backend there too (the identity guard).
storeConformance("folder store (fs.watch)", async (now) => {
  const tmp = tempDir();
  return { open: () => openStore(tmp.dir, { now }), cleanup: async () => tmp.cleanup() };
});

// The SPEC requires wait to work where no file watch exists: the sleep-poll alone must pass too.
storeConformance("folder store (poll only)", async (now) => {
  const tmp = tempDir();
  return {
    open: () => openStore(tmp.dir, { watch: false, now }),
    cleanup: async () => tmp.cleanup(),
    pollOnly: true,
  };
});
