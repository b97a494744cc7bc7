/**
 * Inputs that must get one answer on every store (test/conformance/OneAnswer.test.ts, and PostgreSQL in
 * test/durability/PostgresInstances.test.ts): text a name or a secret value refuses (src/Domain/Text.ts), and a JSON
 * body that is not UTF-8.
 */

/** Characters a line of text refuses, each with a label. */
export const refusedInNames: ReadonlyArray<readonly [string, string]> = [
  ["NUL", "x\u0000y"],
  ["an unpaired high surrogate", "x\ud800y"],
  ["an unpaired low surrogate", "x\udc00"],
  ["U+2028 line separator", "x\u2028y"],
  ["U+2029 paragraph separator", "x\u2029y"],
  ["U+0085 next line", "x\u0085y"],
  ["a line feed", "x\ny"],
  ["a carriage return", "x\ry"],
  ["a form feed", "x\fy"],
  ["a tab", "x\ty"]
]

/** Characters free text (a secret value) refuses. */
export const refusedInValues: ReadonlyArray<readonly [string, string]> = [
  ["NUL", "x\u0000y"],
  ["an unpaired high surrogate", "x\ud800y"],
  ["an unpaired low surrogate", "\udc00x"]
]

/** A JSON body whose `field` holds the bytes FF FE (not UTF-8) between "a" and "b", in `json` (a JSON object text). */
export const withInvalidUtf8 = (json: string, marker = "@@"): Uint8Array => {
  const [before, after] = json.split(marker)
  return Buffer.concat([Buffer.from(before, "utf8"), Buffer.from([0xff, 0xfe]), Buffer.from(after, "utf8")])
}
