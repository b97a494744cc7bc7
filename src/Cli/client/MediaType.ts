/**
 * The media type of a file for `boxkit clipboard put --file`, from its content (never its name): PNG, JPEG, GIF and
 * WebP images by their signature bytes, valid UTF-8 without NUL bytes as `text/plain; charset=utf-8`. The clipboard
 * takes `text/plain` or `image/*` only (spec: PUT /boxes/{box_id}/clipboard), so anything else is refused before
 * sending.
 *
 * Source: docs/ASSUMPTIONS.md "Command line (client commands)".
 *
 * @since 0.1.0
 */
import { Option } from "effect"

const startsWith = (bytes: Uint8Array, signature: ReadonlyArray<number>, at = 0) =>
  bytes.length >= at + signature.length && signature.every((byte, index) => bytes[at + index] === byte)

const ascii = (text: string) => Array.from(text, (character) => character.charCodeAt(0))

/** The image signatures recognised, in the order they are tried. */
const images: ReadonlyArray<{ readonly mediaType: string; readonly matches: (bytes: Uint8Array) => boolean }> = [
  { mediaType: "image/png", matches: (bytes) => startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  { mediaType: "image/jpeg", matches: (bytes) => startsWith(bytes, [0xff, 0xd8, 0xff]) },
  { mediaType: "image/gif", matches: (bytes) => startsWith(bytes, ascii("GIF87a")) || startsWith(bytes, ascii("GIF89a")) },
  { mediaType: "image/webp", matches: (bytes) => startsWith(bytes, ascii("RIFF")) && startsWith(bytes, ascii("WEBP"), 8) }
]

const utf8 = new TextDecoder("utf-8", { fatal: true })

/**
 * The clipboard media type of `bytes` by their content: `image/png`, `image/jpeg`, `image/gif`, `image/webp`, or
 * `text/plain; charset=utf-8` for valid UTF-8 text without NUL bytes; none for anything else.
 */
export const sniff = (bytes: Uint8Array): Option.Option<string> => {
  const image = images.find((candidate) => candidate.matches(bytes))
  if (image !== undefined) return Option.some(image.mediaType)
  if (bytes.includes(0)) return Option.none()
  try {
    utf8.decode(bytes)
    return Option.some("text/plain; charset=utf-8")
  } catch {
    return Option.none()
  }
}
