import type { MessageEvent, StateView } from "../api-types.js";
import { byId } from "./dom.js";

/** The server's event stream (`api/events`, under the page's own secret address): the root's state and each new message, live. */

const RETRY_REFUSED_MS = 5000;

export interface LiveHandlers {
  /** The stream is up after being down, or for the first time: what was sent meanwhile is missed. */
  onUp(): void;
  onState(state: StateView): void;
  onMessage(event: MessageEvent): void;
}

/** Follows the stream for as long as the page is open, showing in `#live` whether it is up. */
export function followEvents(handlers: LiveHandlers): void {
  const status = { connected: false };
  renderLive(status.connected);
  connect(status, handlers);
}

function connect(status: { connected: boolean }, handlers: LiveHandlers): void {
  const events = new EventSource("api/events");
  events.addEventListener("open", () => {
    const wasDown = !status.connected;
    status.connected = true;
    renderLive(status.connected);
    if (wasDown) handlers.onUp();
  });
  events.addEventListener("error", () => {
    status.connected = false;
    renderLive(status.connected);
    // A stream the server cut (this page fell too far behind) is reconnected by the browser;
    // one it refused (503: too many streams open) is not, so try again a little later.
    if (events.readyState === EventSource.CLOSED) {
      events.close();
      setTimeout(() => connect(status, handlers), RETRY_REFUSED_MS);
    }
  });
  events.addEventListener("state", (e) => handlers.onState(JSON.parse(data(e)) as StateView));
  events.addEventListener("message", (e) =>
    handlers.onMessage(JSON.parse(data(e)) as MessageEvent),
  );
}

function data(event: Event): string {
  return (event as globalThis.MessageEvent<string>).data;
}

function renderLive(connected: boolean): void {
  const live = byId("live");
  live.textContent = connected ? "live" : "reconnecting…";
  live.className = connected ? "live on" : "live off";
}
