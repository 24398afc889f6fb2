import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";
import { hostname } from "node:os";
import { isLoopbackHost, isWildcardHost } from "./address.js";

/** A fresh access token: 32 random bytes, URL-safe. */
export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

export function sameToken(given: string | undefined, token: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Where the page lives: `/s/<token>/`. The browser's only credential is this address, which it
 * sends to this server alone; a cookie would go to every port of the host (cookies ignore ports),
 * so a page on any other loopback port would receive it.
 */
export function secretPrefix(token: string): string {
  return `/s/${token}/`;
}

/**
 * What `path` asks for under the secret prefix (`/s/<token>/api/state` → `/api/state`); `""` for
 * the prefix without its last slash; undefined when it does not start with the right token
 * (compared in constant time).
 */
export function underSecretPrefix(path: string, token: string): string | undefined {
  const m = /^\/s\/([^/]*)(\/.*)?$/.exec(path);
  if (!m || !sameToken(m[1], token)) return undefined;
  return m[2] ?? "";
}

export function bearer(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  const m = header ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  return m ? m[1] : undefined;
}

/**
 * Which `Host` headers this server answers. A DNS-rebinding page reaches us under its own
 * domain name, so only loopback names, the bound address and (when bound to every interface)
 * IP literals and this machine's name are accepted, and only with our port.
 */
export class HostPolicy {
  private readonly names = new Set<string>();

  constructor(
    private readonly boundHost: string,
    private readonly port: number,
  ) {
    this.names.add(boundHost.toLowerCase());
    if (isWildcardHost(boundHost)) {
      const own = hostname().toLowerCase();
      this.names.add(own);
      this.names.add(`${own}.local`);
    }
  }

  allows(hostHeader: string | undefined): boolean {
    if (!hostHeader) return false;
    const parsed = splitHostHeader(hostHeader);
    if (!parsed) return false;
    const port = parsed.port ?? 80;
    if (port !== this.port) return false;
    const name = parsed.name.toLowerCase();
    if (isLoopbackHost(name) || this.names.has(name)) return true;
    return isWildcardHost(this.boundHost) && isIP(name) !== 0;
  }
}

function splitHostHeader(value: string): { name: string; port?: number } | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(value.trim());
  if (!m) return undefined;
  const name = m[1]!.replace(/^\[|\]$/g, "");
  return m[2] === undefined ? { name } : { name, port: Number(m[2]) };
}

/**
 * A state-changing request must come from our own page: its `Origin` is exactly this server as
 * the browser reached it. Only a caller authenticated by header (a script: a browser never adds
 * that header on its own) may omit it, since it cannot be a forged cross-site form.
 */
export function originAllowed(req: IncomingMessage, byHeader: boolean): boolean {
  const origin = req.headers.origin;
  const fetchSite = req.headers["sec-fetch-site"];
  if (typeof fetchSite === "string" && fetchSite !== "same-origin" && fetchSite !== "none") {
    return false;
  }
  if (origin === undefined) return byHeader;
  return origin.toLowerCase() === `http://${String(req.headers.host).toLowerCase()}`;
}

/** The headers every response carries. */
export const SECURITY_HEADERS: Record<string, string> = {
  "Content-Security-Policy": [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; "),
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Cache-Control": "no-store",
};
