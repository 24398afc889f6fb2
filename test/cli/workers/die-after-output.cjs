// Preloaded (`--require`) into a CLI process: once its first write to the descriptor named by
// $DIE_AFTER_OUTPUT_FD (1 or 2) is done, the process is killed (SIGKILL), as a crash or a power
// cut right after its output would end it: whatever it meant to do after the output is not done.
const fs = require("node:fs");
const fd = Number(process.env.DIE_AFTER_OUTPUT_FD);
const writeSync = fs.writeSync;
fs.writeSync = function (target, ...rest) {
  const written = writeSync.call(this, target, ...rest);
  if (target === fd) process.kill(process.pid, "SIGKILL");
  return written;
};
