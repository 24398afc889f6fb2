import { openStore } from "../../src/client/open.js";
import { tempDir } from "../helpers/tmp.js";
import { storeConformance } from "./suite.js";

// Opened as every caller opens a root (openStore), so the suite covers what sits above the
// backend there too (the identity guard).
storeConformance("folder store (fs.watch)", async () => {
  const tmp = tempDir();
  return { open: () => openStore(tmp.dir), cleanup: async () => tmp.cleanup() };
});

// The SPEC requires wait to work where no file watch exists: the sleep-poll alone must pass too.
storeConformance("folder store (poll only)", async () => {
  const tmp = tempDir();
  return {
    open: () => openStore(tmp.dir, { watch: false }),
    cleanup: async () => tmp.cleanup(),
    pollOnly: true,
  };
});
