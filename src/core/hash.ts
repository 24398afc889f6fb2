/**
 * FNV-1a over UTF-16 code units, in two 32-bit lanes (two offsets), as 16 hex digits: enough to
 * tell roots or session ids apart, and no `node:crypto` to load (several milliseconds of every
 * CLI start). Not for anything an attacker may choose to collide: names made with it are only
 * kept apart, never trusted.
 */
export function shortHash(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
  const hex = (n: number) => (n >>> 0).toString(16).padStart(8, "0");
  return `${hex(a)}${hex(b)}`;
}
