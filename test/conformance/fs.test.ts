import { FsStore } from "../../src/store/fs/fs-store.js";
import { tempDir } from "../helpers/tmp.js";
import { storeConformance } from "./suite.js";

storeConformance("folder store (fs.watch)", async () => {
  const tmp = tempDir();
  return { open: async () => new FsStore(tmp.dir), cleanup: async () => tmp.cleanup() };
});

// The SPEC requires wait to work where no file watch exists: the sleep-poll alone must pass too.
storeConformance("folder store (poll only)", async () => {
  const tmp = tempDir();
  return {
    open: async () => new FsStore(tmp.dir, { watch: false }),
    cleanup: async () => tmp.cleanup(),
  };
});
