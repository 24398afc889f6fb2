import type { MessageView, PostRequest } from "../api-types.js";
import { byId, h } from "./dom.js";
import { postMessage } from "./http.js";
import { currentChannel, type PageState, savedName, saveName } from "./state.js";

/** The form that posts to the open channel (`#compose`), as the name in From, maybe as a reply. */
export class Compose {
  private replyTo: MessageView | undefined;

  constructor(
    private readonly page: PageState,
    /** Called after a post (the name in From, which marks what is unread, may be new). */
    private readonly onPosted: () => void,
  ) {}

  /** Fills From with the saved name and wires the form; called once. */
  init(): void {
    field("from").value = savedName();
    byId("compose").addEventListener("submit", (e) => void this.submit(e as SubmitEvent));
    byId("body").addEventListener("keydown", (e) => {
      const key = e as KeyboardEvent;
      if (key.key === "Enter" && (key.ctrlKey || key.metaKey)) {
        byId<HTMLFormElement>("compose").requestSubmit();
      }
    });
    byId("cancel-reply").addEventListener("click", () => {
      this.replyTo = undefined;
      this.render();
    });
  }

  /** The name in From, which the page posts and decides as. */
  sender(): string {
    return field("from").value.trim();
  }

  focusSender(): void {
    field("from").focus();
  }

  render(): void {
    const c = currentChannel(this.page);
    byId<HTMLFormElement>("compose").hidden = !c;
    const as = this.page.data?.as;
    if (as !== undefined) {
      // Opened `view --as NAME`: the server posts as NAME only, signed with NAME's key.
      field("from").value = as;
      field("from").readOnly = true;
      field("from").title = `this viewer posts as ${as}, signed with ${as}'s key`;
    }
    const names = c ? c.members.map((m) => m.name) : [];
    byId("to-options").replaceChildren(
      h("option", { value: "all" }),
      ...names.map((n) => h("option", { value: n })),
    );
    const chip = byId("reply-chip");
    if (this.replyTo) {
      chip.hidden = false;
      byId("reply-text").textContent =
        `Replying to #${this.replyTo.seq} · ${this.replyTo.from}: ${this.replyTo.title}`;
    } else {
      chip.hidden = true;
    }
  }

  startReply(m: MessageView): void {
    this.replyTo = m;
    field("to").value = m.from;
    if (field("title").value.trim() === "") {
      field("title").value = /^re:/i.test(m.title) ? m.title : `Re: ${m.title}`;
    }
    this.render();
    byId("body").focus();
  }

  /** Forgets the message being replied to (another channel was opened); the caller renders. */
  dropReply(): void {
    this.replyTo = undefined;
  }

  private async submit(event: SubmitEvent): Promise<void> {
    event.preventDefault();
    const c = currentChannel(this.page);
    if (!c) return;
    const request = this.request();
    saveName(request.from);
    const button = byId<HTMLButtonElement>("send");
    button.disabled = true;
    try {
      await postMessage(c.name, request);
      showError("");
      byId<HTMLTextAreaElement>("body").value = "";
      field("title").value = "";
      this.replyTo = undefined;
      this.render();
      this.onPosted();
    } catch (err) {
      showError((err as Error).message);
    } finally {
      button.disabled = false;
    }
  }

  private request(): PostRequest {
    const request: PostRequest = {
      from: this.sender(),
      to: field("to").value.trim() || "all",
      title: field("title").value.trim(),
      body: byId<HTMLTextAreaElement>("body").value,
      status: byId<HTMLSelectElement>("status").value,
    };
    if (this.replyTo) request.replyTo = this.replyTo.seq;
    return request;
  }
}

function field(id: "from" | "to" | "title"): HTMLInputElement {
  return byId<HTMLInputElement>(id);
}

function showError(message: string): void {
  const box = byId("compose-error");
  box.textContent = message;
  box.hidden = message === "";
}
