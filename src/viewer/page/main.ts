import {
  type ChannelView,
  type ErrorView,
  MESSAGE_PAGE_DEFAULT,
  MESSAGE_PAGE_MAX,
  type MessageEvent,
  type MessagesPage,
  type MessageView,
  type PanelAction,
  type PanelActionRequest,
  type PanelActionResponse,
  type PanelView,
  type PostRequest,
  type RequestItem,
  type RequestsPanel,
  type StateView,
  type TreeNode,
  type TreePanel,
} from "../api-types.js";
import { append, h, renderBlocks } from "./dom.js";
import { parseMarkdown } from "./markdown.js";

/** The page: channels on the left, the conversation in the middle, tasks and cursors beside. */

const NAME_KEY = "agent-chat-viewer:name";
const RETRY_REFUSED_MS = 5000;

interface PageState {
  data: StateView | undefined;
  channel: string | undefined;
  /** The loaded part of the channel, oldest first: the newest page, pages shown since, live ones. */
  messages: MessageView[];
  /** Messages of the channel older than `messages[0]` that are not loaded (as of the last page). */
  earlierCount: number;
  /** The load of the channel's newest page, when it was opened. */
  opening: Promise<void>;
  /** A "Show earlier" load in progress (one at a time). */
  earlierLoad: Promise<boolean> | undefined;
  earlierError: string;
  /** Sender and title of loaded messages and of what they reply to, for the reply links. */
  summaries: Map<number, { from: string; title: string }>;
  replyTo: MessageView | undefined;
  connected: boolean;
  /** The last refusal of a panel action, shown in the panel, by `<channel>\n<panel>`. */
  panelErrors: Map<string, string>;
}

const page: PageState = {
  data: undefined,
  channel: undefined,
  messages: [],
  earlierCount: 0,
  opening: Promise.resolve(),
  earlierLoad: undefined,
  earlierError: "",
  summaries: new Map(),
  replyTo: undefined,
  connected: false,
  panelErrors: new Map(),
};

const $ = (id: string) => document.getElementById(id)!;

async function api<T>(path: string, init?: RequestInit): Promise<T> {
  const res = await fetch(path, { credentials: "same-origin", ...init });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const message =
      (body as ErrorView | undefined)?.error?.message ?? (text.trim() || `HTTP ${res.status}`);
    throw new Error(message);
  }
  return body as T;
}

// --- routing: #/<channel> or #/<channel>/<seq> ----------------------------------------------

function route(): { channel?: string; seq?: number } {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  const out: { channel?: string; seq?: number } = {};
  if (parts[0]) out.channel = decodeURIComponent(parts[0]);
  if (parts[1] && /^\d+$/.test(parts[1])) out.seq = Number(parts[1]);
  return out;
}

function messageHref(channel: string, seq: number): string {
  return `#/${encodeURIComponent(channel)}/${seq}`;
}

async function onRoute(): Promise<void> {
  const target = route();
  const channels = page.data?.channels ?? [];
  const name = target.channel ?? page.channel ?? channels[0]?.name;
  if (!name) return render();
  if (name !== page.channel) {
    page.channel = name;
    page.replyTo = undefined;
    page.messages = [];
    page.earlierCount = 0;
    page.earlierError = "";
    page.summaries = new Map();
    // Never show the previous channel's messages under this channel's name while loading.
    $("messages").replaceChildren(h("p", { class: "empty" }, "Loading…"));
    render();
    page.opening = loadMessages();
  }
  // A link followed while the channel is still loading (the first event opened it) waits for
  // the load, or it would look for its message in an empty list.
  await page.opening;
  if (name !== page.channel) return;
  if (target.seq !== undefined) await reveal(target.seq);
  else scrollToEnd();
}

function fetchPage(channel: string, query = ""): Promise<MessagesPage> {
  return api<MessagesPage>(`/api/channels/${encodeURIComponent(channel)}/messages${query}`);
}

function noteSummaries(res: MessagesPage): void {
  for (const t of res.replyTargets) page.summaries.set(t.seq, t);
  for (const m of res.messages) page.summaries.set(m.seq, m);
}

/** Opens the channel on its newest page (older pages are loaded on request). */
async function loadMessages(): Promise<void> {
  const channel = page.channel;
  if (!channel) return;
  try {
    const res = await fetchPage(channel);
    if (channel !== page.channel) return;
    noteSummaries(res);
    // Live messages that arrived while the page was on its way are kept.
    const shown = new Set(res.messages.map((m) => m.seq));
    const newest = res.messages.at(-1)?.seq ?? 0;
    const live = page.messages.filter((m) => !shown.has(m.seq) && m.seq > newest);
    page.messages = [...res.messages, ...live];
    page.earlierCount = res.earlierCount;
    renderMessages();
  } catch (err) {
    $("messages").replaceChildren(h("p", { class: "empty" }, (err as Error).message));
  }
}

/**
 * Loads the page before the oldest loaded message and puts it above, leaving the message the
 * reader is looking at where it is on screen. Resolves to false when nothing could be loaded.
 */
function loadEarlier(limit = MESSAGE_PAGE_DEFAULT): Promise<boolean> {
  page.earlierLoad ??= (async () => {
    const channel = page.channel;
    const oldest = page.messages[0]?.seq;
    if (!channel || oldest === undefined || page.earlierCount === 0) return false;
    page.earlierError = "";
    renderEarlier(true);
    try {
      const res = await fetchPage(channel, `?before=${oldest}&limit=${limit}`);
      if (channel !== page.channel) return false;
      noteSummaries(res);
      const list = $("messages");
      const firstShown = document.getElementById(`m-${oldest}`);
      keepingPlace(() => {
        page.messages = [...res.messages, ...page.messages];
        page.earlierCount = res.earlierCount;
        const nodes = document.createDocumentFragment();
        for (const m of res.messages) nodes.appendChild(messageNode(m));
        list.insertBefore(nodes, firstShown);
        renderEarlier(false);
      });
      return res.messages.length > 0;
    } catch (err) {
      if (channel !== page.channel) return false;
      page.earlierError = (err as Error).message;
      renderEarlier(false);
      return false;
    }
  })().finally(() => {
    page.earlierLoad = undefined;
  });
  return page.earlierLoad;
}

/** Shows message `seq`, loading earlier pages until it is there (a link to an old message). */
async function reveal(seq: number): Promise<void> {
  const channel = page.channel;
  while (!document.getElementById(`m-${seq}`) && page.earlierCount > 0) {
    const oldest = page.messages[0]?.seq ?? 0;
    if (oldest <= seq) break; // not in this channel (deleted, or not written yet)
    // Seqs only grow, so this many messages reach back to `seq`, plus a few above it to read.
    const wanted = Math.min(MESSAGE_PAGE_MAX, Math.max(MESSAGE_PAGE_DEFAULT, oldest - seq + 10));
    if (!(await loadEarlier(wanted)) || channel !== page.channel) return;
  }
  jumpTo(seq);
}

/** The first message at least partly on screen (the one a reader is looking at). */
function firstVisibleMessage(list: HTMLElement): HTMLElement | undefined {
  const top = Math.max(list.getBoundingClientRect().top, 0);
  const items = list.querySelectorAll<HTMLElement>("article.message");
  let low = 0;
  let high = items.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (items[mid]!.getBoundingClientRect().bottom <= top) low = mid + 1;
    else high = mid;
  }
  return items[low];
}

/**
 * Runs a change to the message list and scrolls so that the message on screen before it stays
 * at the same place. The list scrolls on a computer; on a phone the window does.
 */
function keepingPlace(change: () => void): void {
  const list = $("messages");
  const anchor = firstVisibleMessage(list);
  const before = anchor?.getBoundingClientRect().top;
  change();
  if (!anchor || before === undefined || !anchor.isConnected) return;
  const shift = anchor.getBoundingClientRect().top - before;
  if (shift !== 0) list.scrollTop += shift;
  const left = anchor.getBoundingClientRect().top - before;
  if (Math.abs(left) >= 1) window.scrollBy(0, left);
}

/**
 * Adds messages that arrived live (or were missed while the stream was down) at their place.
 * One older than the loaded part is left to its page, so the list never has a hole.
 */
function addMessages(incoming: MessageView[]): void {
  const have = new Set(page.messages.map((m) => m.seq));
  const oldest = page.messages[0]?.seq;
  const fresh = incoming.filter(
    (m) => !have.has(m.seq) && !(page.earlierCount > 0 && oldest !== undefined && m.seq < oldest),
  );
  if (fresh.length === 0) return;
  const list = $("messages");
  const atEnd = list.scrollHeight - list.scrollTop - list.clientHeight < 80 || isPhone();
  list.querySelector(":scope > .empty")?.remove();
  keepingPlace(() => {
    for (const m of fresh) {
      page.summaries.set(m.seq, m);
      let at = page.messages.length;
      while (at > 0 && page.messages[at - 1]!.seq > m.seq) at -= 1;
      page.messages.splice(at, 0, m);
      const next = page.messages[at + 1];
      list.insertBefore(messageNode(m), next ? document.getElementById(`m-${next.seq}`) : null);
    }
  });
  if (atEnd) scrollToEnd();
}

/** After the stream was down: fetches what was missed, or starts again if that is a lot. */
async function catchUp(): Promise<void> {
  const channel = page.channel;
  if (!channel) return;
  const newest = page.messages.at(-1)?.seq ?? 0;
  try {
    const res = await fetchPage(channel, `?limit=${MESSAGE_PAGE_MAX}`);
    if (channel !== page.channel) return;
    noteSummaries(res);
    const first = res.messages[0]?.seq ?? 0;
    if (page.messages.length === 0 || (res.hasEarlier && first > newest)) {
      page.messages = res.messages.slice(-MESSAGE_PAGE_DEFAULT);
      page.earlierCount = res.earlierCount + res.messages.length - page.messages.length;
      renderMessages();
      scrollToEnd();
    } else {
      addMessages(res.messages);
    }
  } catch {
    // The stream is back but the request failed: the next reconnection tries again.
  }
}

// --- live updates ---------------------------------------------------------------------------

function connect(): void {
  const events = new EventSource("/api/events");
  events.addEventListener("open", () => {
    const wasDown = !page.connected;
    page.connected = true;
    renderLive();
    // After a reconnection, fetch what may have arrived while the stream was down.
    if (wasDown && page.data) void catchUp();
  });
  events.addEventListener("error", () => {
    page.connected = false;
    renderLive();
    // A stream the server cut (this page fell too far behind) is reconnected by the browser;
    // one it refused (503: too many streams open) is not, so try again a little later.
    if (events.readyState === EventSource.CLOSED) {
      events.close();
      setTimeout(connect, RETRY_REFUSED_MS);
    }
  });
  events.addEventListener("state", (e) => {
    const first = page.data === undefined;
    page.data = JSON.parse((e as globalThis.MessageEvent<string>).data) as StateView;
    render();
    if (first) void onRoute();
  });
  events.addEventListener("message", (e) => {
    const { channel, message } = JSON.parse(
      (e as globalThis.MessageEvent<string>).data,
    ) as MessageEvent;
    if (channel === page.channel) addMessages([message]);
  });
}

function isPhone(): boolean {
  return window.matchMedia("(max-width: 760px)").matches;
}

// --- rendering ------------------------------------------------------------------------------

function current(): ChannelView | undefined {
  return page.data?.channels.find((c) => c.name === page.channel);
}

function render(): void {
  renderChannels();
  renderHead();
  renderDetails();
  renderCompose();
}

function renderLive(): void {
  const live = $("live");
  live.textContent = page.connected ? "live" : "reconnecting…";
  live.className = page.connected ? "live on" : "live off";
}

function myName(): string {
  return (localStorage.getItem(NAME_KEY) ?? "").trim();
}

function renderChannels(): void {
  const list = $("channels");
  const channels = page.data?.channels ?? [];
  $("root").textContent = page.data?.root ?? "";
  if (channels.length === 0) {
    list.replaceChildren(
      h("p", { class: "empty" }, "No channels yet. Create one with: agent-chat init NAME"),
    );
    return;
  }
  const me = myName().toLowerCase();
  list.replaceChildren(
    ...channels.map((c) => {
      const mine = c.members.find((m) => m.name.toLowerCase() === me);
      const unread = mine?.unread ?? 0;
      return h(
        "a",
        {
          class: c.name === page.channel ? "channel selected" : "channel",
          href: `#/${encodeURIComponent(c.name)}`,
          "aria-current": c.name === page.channel ? "page" : undefined,
          "data-channel": c.name,
        },
        h(
          "span",
          { class: "channel-line" },
          h("span", { class: "channel-name" }, `#${c.name}`),
          unread > 0
            ? h("span", { class: "badge unread", title: "unread for you" }, String(unread))
            : null,
          h("span", { class: "count", title: "messages" }, String(c.messageCount)),
        ),
        c.topic ? h("span", { class: "channel-topic" }, c.topic) : null,
      );
    }),
  );
}

function renderHead(): void {
  const c = current();
  const head = $("channel-head");
  if (!c) {
    head.replaceChildren(h("h1", {}, page.data ? "No channel" : "Loading…"));
    return;
  }
  head.replaceChildren();
  append(head, [
    h("h1", {}, `#${c.name}`),
    c.topic ? h("p", { class: "topic" }, c.topic) : null,
    h(
      "p",
      { class: "meta" },
      `${c.messageCount} message${c.messageCount === 1 ? "" : "s"} · `,
      c.open ? "open to everyone" : `${c.members.length} members`,
    ),
    panelSummary(c),
  ]);
}

/** One line under the channel name pointing at its panels (on a phone they sit far below). */
function panelSummary(c: ChannelView): HTMLElement | null {
  const chips: HTMLElement[] = [];
  for (const panel of c.panels) {
    const chip =
      panel.kind === "requests"
        ? panel.items.length > 0
          ? h(
              "button",
              { type: "button", class: "chip attention", "data-goto": "governance" },
              `${panel.items.length} pending request${panel.items.length === 1 ? "" : "s"} for ${panel.maintainer}`,
            )
          : null
        : h(
            "button",
            { type: "button", class: "chip", "data-goto": "workspace" },
            "workspace focus ",
            h("code", {}, panel.focus),
          );
    if (!chip) continue;
    chip.addEventListener("click", () => {
      document.getElementById(chip.dataset.goto!)?.scrollIntoView({ block: "start" });
    });
    chips.push(chip);
  }
  return chips.length > 0 ? h("p", { class: "panel-summary" }, ...chips) : null;
}

function renderDetails(): void {
  const c = current();
  const box = $("details");
  if (!c) {
    box.replaceChildren();
    return;
  }
  const members = h(
    "section",
    { class: "panel", id: "members" },
    h("h2", {}, "Members & read cursors"),
    c.members.length === 0
      ? h("p", { class: "empty" }, "Nobody yet.")
      : h(
          "ul",
          { class: "members" },
          ...c.members.map((m) =>
            h(
              "li",
              { "data-member": m.name },
              h("span", { class: "who" }, m.name),
              h(
                "span",
                { class: "cursor" },
                m.cursor > 0 ? `read to #${m.cursor}` : "has not read",
              ),
              m.unread > 0
                ? h("span", { class: "badge unread" }, `${m.unread} unread`)
                : h("span", { class: "badge done" }, "up to date"),
            ),
          ),
        ),
  );
  const tasks = h(
    "section",
    { class: "panel", id: "tasks" },
    h("h2", {}, "Tasks & claims"),
    c.tasks.length === 0
      ? h("p", { class: "empty" }, "No task markers.")
      : h(
          "ul",
          { class: "tasks" },
          ...c.tasks.map((t) =>
            h(
              "li",
              { "data-task": t.id },
              h("span", { class: "task-id" }, `task-${t.id}`),
              h("span", { class: "task-title" }, t.title),
              t.state === "open"
                ? h("span", { class: "badge open" }, "open")
                : h(
                    "span",
                    { class: `badge ${t.state}` },
                    `${t.state === "expired" ? "expired, held by" : `${t.state} by`} ${t.holder ?? "?"}`,
                  ),
            ),
          ),
        ),
  );
  // Requests wait for someone, so they come first; the workspace after them.
  const panels = [...c.panels]
    .sort((a, b) => Number(b.kind === "requests") - Number(a.kind === "requests"))
    .map((p) => panelNode(c.name, p));
  box.replaceChildren(...panels, members, tasks);
}

function panelNode(channel: string, panel: PanelView): HTMLElement {
  return panel.kind === "tree" ? treePanelNode(panel) : requestsPanelNode(channel, panel);
}

/** The K-folder as nested lists: `[name]` and description per folder, the focus highlighted. */
function treePanelNode(panel: TreePanel): HTMLElement {
  const folder = (node: TreeNode): HTMLElement =>
    h(
      "li",
      { class: node.focus ? "kfolder focus" : "kfolder", "data-folder": node.name },
      h(
        "span",
        { class: "kfolder-line" },
        h("span", { class: "kfolder-name" }, `[${node.name}]`),
        node.description ? h("span", { class: "kfolder-desc" }, node.description) : null,
        node.focus ? h("span", { class: "badge focus-badge" }, "focus") : null,
      ),
      node.children.length + node.files.length > 0
        ? h(
            "ul",
            {},
            ...node.children.map(folder),
            ...node.files.map((f) => h("li", { class: "kfile-name" }, f)),
          )
        : null,
    );
  return h(
    "section",
    { class: "panel", id: "workspace", "data-panel": panel.id },
    h("h2", {}, panel.title),
    h("p", { class: "meta focus-line" }, "focus ", h("code", {}, panel.focus)),
    h("ul", { class: "ktree", title: panel.text }, folder(panel.root)),
  );
}

const ACTION_LABEL: Record<PanelAction, string> = {
  approve: "Approve",
  reject: "Reject",
  veto: "Veto",
};

function requestsPanelNode(channel: string, panel: RequestsPanel): HTMLElement {
  const key = `${channel}\n${panel.id}`;
  const section = h(
    "section",
    { class: "panel", id: "governance", "data-panel": panel.id },
    h("h2", {}, panel.title),
    h(
      "p",
      { class: "meta" },
      `Decided by ${panel.maintainer}. Buttons post the verdict as the name in From.`,
    ),
  );
  const error = page.panelErrors.get(key);
  if (panel.items.length === 0) {
    section.appendChild(h("p", { class: "empty" }, "Nothing pending."));
  } else {
    const list = h("ul", { class: "requests" });
    for (const item of panel.items) {
      const buttons = item.actions.map((action) =>
        h(
          "button",
          { type: "button", class: `verdict ${action}`, "data-action": action },
          ACTION_LABEL[action],
        ),
      );
      buttons.forEach((button, i) => {
        button.addEventListener("click", () => {
          void decideRequest(key, channel, panel.id, item, item.actions[i]!, buttons);
        });
      });
      list.appendChild(
        h(
          "li",
          { "data-request": item.id },
          h(
            "span",
            { class: "request-line" },
            h(
              "a",
              {
                class: "seq",
                href: messageHref(channel, item.seq),
                title: `requested ${formatTime(item.ts)} (${item.ts})`,
              },
              `#${item.seq}`,
            ),
            h("span", { class: "request-title" }, item.title),
          ),
          h(
            "span",
            { class: "request-meta" },
            h("span", { class: "who" }, item.from),
            " asks to ",
            h("code", {}, item.action || "?"),
            " ",
            h("span", { class: `badge band-${item.band}` }, item.band),
          ),
          item.vetoUntil
            ? h(
                "span",
                { class: "request-deadline", title: item.vetoUntil },
                `veto until ${formatTime(item.vetoUntil)}; it goes ahead unless vetoed`,
              )
            : null,
          h("span", { class: "actions" }, ...buttons),
        ),
      );
    }
    section.appendChild(list);
  }
  if (error) section.appendChild(h("p", { class: "error panel-error", role: "alert" }, error));
  return section;
}

async function decideRequest(
  key: string,
  channel: string,
  panelId: string,
  item: RequestItem,
  action: PanelAction,
  buttons: HTMLElement[],
): Promise<void> {
  const as = input("from").value.trim();
  if (!as) {
    page.panelErrors.set(
      key,
      "Type your name in the From box first: the verdict is posted as you.",
    );
    renderDetails();
    input("from").focus();
    return;
  }
  localStorage.setItem(NAME_KEY, as);
  for (const b of buttons) (b as HTMLButtonElement).disabled = true;
  const body: PanelActionRequest = { as };
  try {
    await api<PanelActionResponse>(
      `/api/channels/${encodeURIComponent(channel)}/panels/${encodeURIComponent(panelId)}/items/${encodeURIComponent(item.id)}/${action}`,
      {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      },
    );
    page.panelErrors.delete(key);
  } catch (err) {
    page.panelErrors.set(
      key,
      `${ACTION_LABEL[action]} #${item.seq} refused: ${(err as Error).message}`,
    );
  }
  for (const b of buttons) (b as HTMLButtonElement).disabled = false;
  renderDetails();
}

function formatTime(ts: string): string {
  const date = new Date(ts);
  if (Number.isNaN(date.getTime())) return ts;
  const now = new Date();
  const sameDay = date.toDateString() === now.toDateString();
  const time = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (sameDay) return time;
  const day = date.toLocaleDateString([], {
    month: "short",
    day: "numeric",
    year: date.getFullYear() === now.getFullYear() ? undefined : "numeric",
  });
  return `${day}, ${time}`;
}

function renderMessages(): void {
  const list = $("messages");
  if (page.messages.length === 0) {
    list.replaceChildren(h("p", { class: "empty" }, "No messages yet. Say hello below."));
    return;
  }
  list.replaceChildren(...page.messages.map(messageNode));
  renderEarlier(false);
}

/** The "Show earlier messages" control at the top of the list, while older messages exist. */
function renderEarlier(loading: boolean): void {
  const list = $("messages");
  const existing = document.getElementById("earlier");
  if (page.earlierCount === 0 && !page.earlierError) {
    existing?.remove();
    return;
  }
  const button = h(
    "button",
    { type: "button", id: "show-earlier", disabled: loading },
    loading ? "Loading…" : "Show earlier messages",
  );
  button.addEventListener("click", () => void loadEarlier());
  const control = h(
    "div",
    { class: "earlier", id: "earlier" },
    button,
    h(
      "span",
      { class: "meta" },
      `${page.earlierCount} earlier message${page.earlierCount === 1 ? "" : "s"}`,
    ),
    page.earlierError ? h("span", { class: "error", role: "alert" }, page.earlierError) : null,
  );
  if (existing) existing.replaceWith(control);
  else list.prepend(control);
}

function messageNode(m: MessageView): HTMLElement {
  const channel = page.channel ?? "";
  const replied = m.replyTo !== undefined ? page.summaries.get(m.replyTo) : undefined;
  const reply = h("button", { type: "button", class: "reply-button" }, "Reply");
  reply.addEventListener("click", () => startReply(m));
  const to =
    m.to.trim() === "" || /^(all|\*|\[\])$/i.test(m.to.trim())
      ? "everyone"
      : m.to
          .split(",")
          .map((name) => name.trim())
          .join(", ");
  return h(
    "article",
    { class: "message", id: `m-${m.seq}`, "data-seq": m.seq },
    h(
      "header",
      {},
      h("a", { class: "seq", href: messageHref(channel, m.seq), title: m.file }, `#${m.seq}`),
      h(
        "span",
        { class: "route" },
        h("span", { class: "from" }, m.from),
        h("span", { class: "arrow", "aria-label": "to" }, " → "),
        h("span", { class: "to" }, to),
      ),
      h("span", { class: "badge status", "data-status": m.status.toLowerCase() }, m.status),
      h("time", { datetime: m.ts, title: m.ts }, formatTime(m.ts)),
      reply,
    ),
    m.replyTo !== undefined
      ? h(
          "a",
          { class: "reply-link", href: messageHref(channel, m.replyTo) },
          `↪ in reply to #${m.replyTo}`,
          replied ? ` · ${replied.from}: ${replied.title}` : "",
        )
      : null,
    h("h3", { class: "title" }, m.title),
    h("div", { class: "body" }, renderBlocks(parseMarkdown(m.body))),
  );
}

function jumpTo(seq: number): void {
  const el = document.getElementById(`m-${seq}`);
  if (!el) return;
  el.scrollIntoView({ block: "center" });
  el.classList.remove("flash");
  void el.offsetWidth; // restart the highlight animation
  el.classList.add("flash");
}

function scrollToEnd(): void {
  const list = $("messages");
  list.scrollTop = list.scrollHeight;
  if (isPhone()) list.lastElementChild?.scrollIntoView({ block: "end" });
}

// --- compose --------------------------------------------------------------------------------

function input(id: string): HTMLInputElement {
  return $(id) as HTMLInputElement;
}

function renderCompose(): void {
  const c = current();
  const form = $("compose") as HTMLFormElement;
  form.hidden = !c;
  const options = $("to-options");
  const names = c ? c.members.map((m) => m.name) : [];
  options.replaceChildren(
    h("option", { value: "all" }),
    ...names.map((n) => h("option", { value: n })),
  );
  const chip = $("reply-chip");
  if (page.replyTo) {
    chip.hidden = false;
    $("reply-text").textContent =
      `Replying to #${page.replyTo.seq} · ${page.replyTo.from}: ${page.replyTo.title}`;
  } else {
    chip.hidden = true;
  }
}

function startReply(m: MessageView): void {
  page.replyTo = m;
  input("to").value = m.from;
  if (input("title").value.trim() === "") {
    input("title").value = /^re:/i.test(m.title) ? m.title : `Re: ${m.title}`;
  }
  renderCompose();
  ($("body") as HTMLTextAreaElement).focus();
}

function showError(message: string): void {
  const box = $("compose-error");
  box.textContent = message;
  box.hidden = message === "";
}

async function submit(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const c = current();
  if (!c) return;
  const from = input("from").value.trim();
  localStorage.setItem(NAME_KEY, from);
  const request: PostRequest = {
    from,
    to: input("to").value.trim() || "all",
    title: input("title").value.trim(),
    body: ($("body") as HTMLTextAreaElement).value,
    status: ($("status") as HTMLSelectElement).value,
  };
  if (page.replyTo) request.replyTo = page.replyTo.seq;
  const button = $("send") as HTMLButtonElement;
  button.disabled = true;
  try {
    await api(`/api/channels/${encodeURIComponent(c.name)}/messages`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(request),
    });
    showError("");
    ($("body") as HTMLTextAreaElement).value = "";
    input("title").value = "";
    page.replyTo = undefined;
    renderCompose();
    renderChannels();
  } catch (err) {
    showError((err as Error).message);
  } finally {
    button.disabled = false;
  }
}

function init(): void {
  input("from").value = myName();
  $("compose").addEventListener("submit", (e) => void submit(e as SubmitEvent));
  $("body").addEventListener("keydown", (e) => {
    const key = e as KeyboardEvent;
    if (key.key === "Enter" && (key.ctrlKey || key.metaKey)) {
      ($("compose") as HTMLFormElement).requestSubmit();
    }
  });
  $("cancel-reply").addEventListener("click", () => {
    page.replyTo = undefined;
    renderCompose();
  });
  window.addEventListener("hashchange", () => void onRoute());
  renderLive();
  connect();
}

init();
