// Preloaded (--require) by the start-up bench's CPU figures: at exit, writes the process's CPU
// time (user + system, microseconds) to descriptor 3, a pipe the bench reads.
process.on("exit", () => {
  const { user, system } = process.cpuUsage();
  try {
    require("node:fs").writeSync(3, String(user + system));
  } catch {
    // Not started by the bench.
  }
});
