/**
 * JSON written by anyone with access to the root or the server: its value, or undefined when it
 * is not JSON at all (the caller then checks the shape it expects, as for any untrusted value).
 */
export function parseUntrustedJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
