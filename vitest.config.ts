import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/torture/**"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration tests spawn real processes; two workers suit the 2-core machines we run on.
    maxWorkers: 2,
  },
});
