import type {
  ChannelView,
  MemberView,
  PanelAction,
  PanelView,
  PathLeaseView,
  RequestItem,
  RequestsPanel,
  TaskView,
  TreeNode,
  TreePanel,
} from "../api-types.js";
import { byId, h } from "./dom.js";
import { decidePanelItem } from "./http.js";
import { messageHref } from "./route.js";
import { currentChannel, type PageState, saveName } from "./state.js";
import { formatTime } from "./time.js";

/**
 * The open channel's side panels (`#details`): the panels other parts plug in (governance
 * requests, whose buttons post a verdict, and the workspace tree), members with their read
 * cursors, and tasks.
 */

/** Who a verdict is posted as: the compose form's From box. */
export interface Sender {
  sender(): string;
  focusSender(): void;
}

/** A requests panel of a channel; `key` files its last refusal. */
interface RequestsTarget {
  key: string;
  channel: string;
  panelId: string;
}

const ACTION_LABEL: Record<PanelAction, string> = {
  approve: "Approve",
  reject: "Reject",
  veto: "Veto",
};

export class Panels {
  /** The last refusal of a panel action, shown in the panel, by `<channel>\n<panel>`. */
  private readonly errors = new Map<string, string>();

  constructor(
    private readonly page: PageState,
    private readonly from: Sender,
  ) {}

  render(): void {
    const c = currentChannel(this.page);
    const box = byId("details");
    if (!c) {
      box.replaceChildren();
      return;
    }
    // Requests wait for someone, so they come first; the workspace after them.
    const panels = [...c.panels]
      .sort((a, b) => Number(b.kind === "requests") - Number(a.kind === "requests"))
      .map((p) => this.panelNode(c.name, p));
    box.replaceChildren(...panels, membersNode(c), tasksNode(c), leasesNode(c));
  }

  private panelNode(channel: string, panel: PanelView): HTMLElement {
    return panel.kind === "tree" ? treePanelNode(panel) : this.requestsPanelNode(channel, panel);
  }

  private requestsPanelNode(channel: string, panel: RequestsPanel): HTMLElement {
    const target: RequestsTarget = { key: `${channel}\n${panel.id}`, channel, panelId: panel.id };
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
    const error = this.errors.get(target.key);
    if (panel.items.length === 0) {
      section.appendChild(h("p", { class: "empty" }, "Nothing pending."));
    } else {
      const items = panel.items.map((item) =>
        requestNode(channel, item, this.buttons(target, item)),
      );
      section.appendChild(h("ul", { class: "requests" }, ...items));
    }
    if (error) section.appendChild(h("p", { class: "error panel-error", role: "alert" }, error));
    return section;
  }

  /** The verdict buttons of a request. */
  private buttons(target: RequestsTarget, item: RequestItem): HTMLButtonElement[] {
    const buttons = item.actions.map(
      (action) =>
        h(
          "button",
          { type: "button", class: `verdict ${action}`, "data-action": action },
          ACTION_LABEL[action],
        ) as HTMLButtonElement,
    );
    buttons.forEach((button, i) => {
      button.addEventListener("click", () => {
        void this.decide(target, item, item.actions[i]!, buttons);
      });
    });
    return buttons;
  }

  private async decide(
    target: RequestsTarget,
    item: RequestItem,
    action: PanelAction,
    buttons: HTMLButtonElement[],
  ): Promise<void> {
    const as = this.from.sender();
    if (!as) {
      this.errors.set(
        target.key,
        "Type your name in the From box first: the verdict is posted as you.",
      );
      this.render();
      this.from.focusSender();
      return;
    }
    saveName(as);
    for (const b of buttons) b.disabled = true;
    try {
      await decidePanelItem(target.channel, target.panelId, item.id, action, { as });
      this.errors.delete(target.key);
    } catch (err) {
      const refusal = `${ACTION_LABEL[action]} #${item.seq} refused: ${(err as Error).message}`;
      this.errors.set(target.key, refusal);
    }
    for (const b of buttons) b.disabled = false;
    this.render();
  }
}

/** One pending request: its message, who asks for what, the veto deadline, the buttons. */
function requestNode(channel: string, item: RequestItem, buttons: HTMLElement[]): HTMLElement {
  const requested = `requested ${formatTime(item.ts)} (${item.ts})`;
  return h(
    "li",
    { "data-request": item.id },
    h(
      "span",
      { class: "request-line" },
      h(
        "a",
        { class: "seq", href: messageHref(channel, item.seq), title: requested },
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
  );
}

/** The K-folder as nested lists: `[name]` and description per folder, the focus highlighted. */
function treePanelNode(panel: TreePanel): HTMLElement {
  return h(
    "section",
    { class: "panel", id: "workspace", "data-panel": panel.id },
    h("h2", {}, panel.title),
    h("p", { class: "meta focus-line" }, "focus ", h("code", {}, panel.focus)),
    h("ul", { class: "ktree", title: panel.text }, folderNode(panel.root)),
  );
}

function folderNode(node: TreeNode): HTMLElement {
  return h(
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
          ...node.children.map(folderNode),
          ...node.files.map((f) => h("li", { class: "kfile-name" }, f)),
        )
      : null,
  );
}

function membersNode(c: ChannelView): HTMLElement {
  const row = (m: MemberView) =>
    h(
      "li",
      { "data-member": m.name, "data-presence": m.presence },
      h("span", {
        class: "presence-dot",
        title: m.presence.replace("-", " "),
        "aria-label": m.presence.replace("-", " "),
      }),
      h("span", { class: "who" }, m.name),
      h("span", { class: "cursor" }, m.cursor > 0 ? `read to #${m.cursor}` : "has not read"),
      m.unread > 0
        ? h("span", { class: "badge unread" }, `${m.unread} unread`)
        : h("span", { class: "badge done" }, "up to date"),
      m.owes.length > 0
        ? h(
            "span",
            { class: "badge owes", title: m.owes.map((seq) => `#${seq}`).join(", ") },
            `owes ${m.owes.length} answer${m.owes.length === 1 ? "" : "s"}`,
          )
        : null,
    );
  return listPanel("members", "Members, presence & read cursors", "Nobody yet.", c.members, row);
}

function tasksNode(c: ChannelView): HTMLElement {
  const row = (t: TaskView) =>
    h(
      "li",
      { "data-task": t.id },
      h("span", { class: "task-id" }, `task-${t.id}`),
      h("span", { class: "task-title" }, t.title),
      taskBadge(t),
    );
  return listPanel("tasks", "Tasks & claims", "No task markers.", c.tasks, row, "tasks");
}

function taskBadge(t: TaskView): HTMLElement {
  if (t.state === "open") return h("span", { class: "badge open" }, "open");
  const what = t.state === "expired" ? "expired, held by" : `${t.state} by`;
  const lease = t.token === undefined ? "" : ` · token ${t.token}${timeLeft(t.expiresAt)}`;
  return h("span", { class: `badge ${t.state}` }, `${what} ${t.holder ?? "?"}${lease}`);
}

/** Live path leases: who reserves which files, with token and time left (docs/leases.md). */
function leasesNode(c: ChannelView): HTMLElement {
  const row = (l: PathLeaseView) =>
    h(
      "li",
      { "data-lease": String(l.token) },
      h("code", { class: "lease-pattern" }, l.pattern),
      h(
        "span",
        { class: `badge ${l.exclusive ? "claimed" : "open"}` },
        `${l.exclusive ? "" : "shared, "}${l.holder} · token ${l.token}${timeLeft(l.expiresAt)}`,
      ),
      l.reason ? h("span", { class: "task-title" }, l.reason) : "",
    );
  return listPanel("leases", "Path leases", "No path leases.", c.leases, row, "tasks");
}

/** A channel panel: its heading, then one list item per entry, or `empty` when there are none. */
function listPanel<T>(
  id: string,
  title: string,
  empty: string,
  items: readonly T[],
  row: (item: T) => HTMLElement,
  listClass = id,
): HTMLElement {
  return h(
    "section",
    { class: "panel", id },
    h("h2", {}, title),
    items.length === 0
      ? h("p", { class: "empty" }, empty)
      : h("ul", { class: listClass }, ...items.map(row)),
  );
}

/** ` · 12m left`, as of the last refresh of the state. */
function timeLeft(expiresAt: string | undefined): string {
  if (expiresAt === undefined) return "";
  const s = Math.max(0, Math.round((Date.parse(expiresAt) - Date.now()) / 1000));
  const text =
    s >= 3600
      ? `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`
      : s >= 60
        ? `${Math.floor(s / 60)}m`
        : `${s}s`;
  return ` · ${text} left`;
}

/** One line under the channel name pointing at its panels (on a phone they sit far below). */
export function panelSummary(c: ChannelView): HTMLElement | null {
  const chips: HTMLElement[] = [];
  for (const panel of c.panels) {
    const chip = summaryChip(panel);
    if (!chip) continue;
    chip.addEventListener("click", () => {
      document.getElementById(chip.dataset.goto!)?.scrollIntoView({ block: "start" });
    });
    chips.push(chip);
  }
  return chips.length > 0 ? h("p", { class: "panel-summary" }, ...chips) : null;
}

function summaryChip(panel: PanelView): HTMLElement | null {
  if (panel.kind === "tree") {
    return h(
      "button",
      { type: "button", class: "chip", "data-goto": "workspace" },
      "workspace focus ",
      h("code", {}, panel.focus),
    );
  }
  const count = panel.items.length;
  if (count === 0) return null;
  return h(
    "button",
    { type: "button", class: "chip attention", "data-goto": "governance" },
    `${count} pending request${count === 1 ? "" : "s"} for ${panel.maintainer}`,
  );
}
