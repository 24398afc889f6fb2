import { AgentChatError } from "../core/errors.js";
import type { Message } from "../core/message.js";
import {
  decide,
  governanceOf,
  openRequests,
  requestDigest,
  type Verdict,
} from "../features/governance/index.js";
import type { Store } from "../store/types.js";
import type { PanelAction, PanelActionResponse, PanelView, RequestItem } from "./api-types.js";

export interface PanelContext {
  store: Store;
  channel: string;
  /** The channel's messages as the viewer holds them (seq order); reading them costs nothing. */
  messages: readonly Message[];
}

/**
 * Where other parts of agent-chat plug a channel panel into the viewer: whoever starts the viewer
 * passes the providers (`ViewerOptions.panels`), so the viewer never imports the parts that
 * provide them (docs/design.md §3; the CLI composes them in src/cli/plugins/). A provider returns
 * undefined when the channel has no such data, and the page then shows nothing for it. Panels
 * are loaded again with the once-a-second refresh, whenever a message arrives, and whenever a
 * provider's own `watch` reports a change.
 */
export interface PanelProvider {
  id: string;
  load(context: PanelContext): Promise<PanelView | undefined>;
  /**
   * Calls `onChange` when the panel's data may have changed by other means than a message
   * (within milliseconds rather than at the next refresh). Returns the function that stops it,
   * or undefined when there is nothing to watch (yet).
   */
  watch?(store: Store, channel: string, onChange: () => void): (() => void) | undefined;
  /** Acts on one item of a `requests` panel on behalf of the named human. */
  act?(
    store: Store,
    channel: string,
    itemId: string,
    action: PanelAction,
    input: { as: string; note?: string },
  ): Promise<PanelActionResponse>;
}

const VERDICT_OF: Record<PanelAction, Verdict> = {
  approve: "approved",
  reject: "rejected",
  veto: "vetoed",
};

/** Pending governance requests (docs/governance.md), decided by the channel's maintainer. */
export const governancePanel: PanelProvider = {
  id: "governance",
  async load({ store, channel, messages }) {
    const profile = governanceOf(await store.roster(channel));
    // No profile, or one with nobody to decide: nothing can be pending, so no panel.
    if (!profile?.maintainer) return undefined;
    const open = openRequests(messages, profile.maintainer, Date.now(), await requestDigest());
    const items: RequestItem[] = open.map((r) => {
      const item: RequestItem = {
        id: String(r.seq),
        seq: r.seq,
        title: r.title,
        from: r.from,
        action: r.action,
        band: r.band,
        ts: r.ts,
        actions: r.band === "notify" ? ["approve", "reject", "veto"] : ["approve", "reject"],
      };
      if (r.vetoUntil) item.vetoUntil = r.vetoUntil;
      return item;
    });
    return {
      id: "governance",
      kind: "requests",
      title: "Pending requests",
      maintainer: profile.maintainer,
      items,
    };
  },
  async act(store, channel, itemId, action, input) {
    const seq = Number(itemId);
    if (!/^\d+$/.test(itemId) || !Number.isSafeInteger(seq) || seq <= 0) {
      throw new AgentChatError("INVALID_ARGUMENT", `${itemId} is not a request number`);
    }
    const decideInput: Parameters<typeof decide>[3] = { as: input.as, verdict: VERDICT_OF[action] };
    if (input.note !== undefined) decideInput.note = input.note;
    const result = await decide(store, channel, seq, decideInput);
    return { seq: result.seq, file: result.file };
  },
};

/** The panels the viewer shows when its starter names none: those built on core and client alone. */
export const defaultPanels: readonly PanelProvider[] = [governancePanel];
