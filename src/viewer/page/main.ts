import { renderChannels, renderHead } from "./channels.js";
import { Compose } from "./compose.js";
import { followEvents } from "./live.js";
import { MessageList } from "./message-list.js";
import { Panels } from "./panels.js";
import { route } from "./route.js";
import { initSearch } from "./search.js";
import type { PageState } from "./state.js";
import { ThreadPanel } from "./thread.js";

/**
 * The page: channels on the left, the conversation in the middle, tasks and cursors beside.
 * This module only wires the parts together; each keeps its own state beside the shared `page`.
 */

const page: PageState = { data: undefined, channel: undefined };
const compose = new Compose(page, () => renderChannels(page));
const panels = new Panels(page, compose);
const thread = new ThreadPanel(page, (m) => compose.startReply(m));
const messages = new MessageList(
  page,
  (m) => compose.startReply(m),
  (m) => void thread.open(m),
);

function render(): void {
  renderChannels(page);
  renderHead(page);
  panels.render();
  compose.render();
}

/** Opens the channel the address names (#/<channel>, or the first) and shows #/<channel>/<seq>. */
async function onRoute(): Promise<void> {
  const target = route();
  const name = target.channel ?? page.channel ?? page.data?.channels[0]?.name;
  if (!name) return render();
  if (name !== page.channel) {
    page.channel = name;
    compose.dropReply();
    thread.close();
    messages.open();
    render();
  }
  // A link followed while the channel is still loading (the first event opened it) waits for
  // the load, or it would look for its message in an empty list.
  await messages.opened();
  if (name !== page.channel) return;
  if (target.seq !== undefined) await messages.reveal(target.seq);
  else messages.scrollToEnd();
}

compose.init();
initSearch();
window.addEventListener("hashchange", () => void onRoute());
followEvents({
  onUp() {
    // After a reconnection, fetch what may have arrived while the stream was down.
    if (page.data) void messages.catchUp();
  },
  onState(state) {
    const first = page.data === undefined;
    page.data = state;
    render();
    messages.refreshReceipts();
    if (first) void onRoute();
  },
  onMessage({ channel, message }) {
    if (channel === page.channel) {
      messages.add([message]);
      // An answer changes the receipts of the message it replies to.
      messages.refreshReceipts();
    }
  },
});
