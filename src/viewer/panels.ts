import type { Store } from "../store/types.js";
import type { PanelView } from "./api-types.js";

/**
 * Where other parts of agent-chat plug a channel panel into the viewer: the workspace tree with
 * its focus, pending governance requests with approve/reject. A provider returns undefined when
 * the channel has no such data, and the page then shows nothing for it. None is registered in
 * this version of the viewer; the workspace and governance features add theirs here.
 */
export interface PanelProvider {
  id: string;
  load(store: Store, channel: string): Promise<PanelView | undefined>;
  /** Approve or reject one item of a `requests` panel on behalf of the named human. */
  act?(
    store: Store,
    channel: string,
    itemId: string,
    action: "approve" | "reject",
    as: string,
  ): Promise<void>;
}

export const panelProviders: PanelProvider[] = [];
