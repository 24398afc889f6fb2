/** chat.py 0.7's derived channel summary and its `state.md` (docs/state.md), loaded on demand. */

export { channelState } from "./file.js";
