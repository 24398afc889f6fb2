import { isIP } from "node:net";
import { AgentChatError } from "../core/errors.js";

/** The viewer's fixed default port, so the address is easy to find again (its secret path is new each run). */
export const DEFAULT_VIEWER_PORT = 7391;
export const DEFAULT_VIEWER_HOST = "127.0.0.1";

export interface ListenAddress {
  host: string;
  port: number;
}

/**
 * Parses `PORT`, `HOST:PORT`, `HOST` or `[IPv6]:PORT` as given to `--http`. Port 0 asks the
 * system for a free port.
 */
export function parseListenAddress(text: string): ListenAddress {
  const value = text.trim();
  if (value === "") return { host: DEFAULT_VIEWER_HOST, port: DEFAULT_VIEWER_PORT };
  let host: string;
  let portText: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::(.*))?$/.exec(value);
  if (bracketed) {
    host = bracketed[1]!;
    portText = bracketed[2];
  } else if (/^\d+$/.test(value)) {
    host = DEFAULT_VIEWER_HOST;
    portText = value;
  } else if (isIP(value) === 6) {
    host = value;
  } else {
    const colon = value.lastIndexOf(":");
    host = colon < 0 ? value : value.slice(0, colon);
    portText = colon < 0 ? undefined : value.slice(colon + 1);
  }
  if (host === "") host = DEFAULT_VIEWER_HOST;
  let port = DEFAULT_VIEWER_PORT;
  if (portText !== undefined) {
    port = Number(portText);
    if (!/^\d+$/.test(portText) || !Number.isInteger(port) || port > 65535) {
      throw new AgentChatError(
        "INVALID_ARGUMENT",
        `invalid port ${JSON.stringify(portText)} in ${JSON.stringify(text)}: use a number from 0 to 65535`,
      );
    }
  }
  if (!/^[A-Za-z0-9.:-]+$/.test(host)) {
    throw new AgentChatError("INVALID_ARGUMENT", `invalid host ${JSON.stringify(host)}`);
  }
  return { host, port };
}

/** Names that always mean this machine, whatever DNS says. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (h === "::1") return true;
  return isIP(h) === 4 && h.startsWith("127.");
}

/** `0.0.0.0` and `::` listen on every interface. */
export function isWildcardHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "");
  return h === "0.0.0.0" || h === "::";
}

/** A host as it appears in a URL (IPv6 literals in brackets). */
export function urlHost(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}
