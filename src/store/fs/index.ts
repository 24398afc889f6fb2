/** The folder backend: every channel a folder of markdown files, exactly as the SPEC says. */
export { FsStore, type FsStoreOptions } from "./fs-store.js";
