/** The body every torture writer sends as message `i`: multi-line, unicode, a `---` line. */
export function bodyOf(writer, i) {
  return `${writer}#${i}\nline two: ünïcödé ✓ \`code\`\n---\n- item ${i}`;
}
