import { defineConfig } from "vitest/config";

// `npm run test:torture [-- --full]`: the suite that breaks things on purpose. Bounded to a few
// minutes by default (CI); `--full` runs the sizes the reliability issue names.
export default defineConfig({
  test: {
    include: ["test/torture/**/*.test.ts"],
    testTimeout: 600_000,
    hookTimeout: 60_000,
    // Each file already runs many processes at once: one file at a time.
    fileParallelism: false,
  },
});
