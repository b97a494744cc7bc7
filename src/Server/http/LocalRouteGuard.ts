/**
 * Who may use the `/_local` routes: what a web page in the developer's browser must never reach. A
 * request is refused unless
 *
 * - it comes from a loopback address (unless `exposeLocalRoutes`),
 * - its `Host` is a loopback name or address (`localhost`, `*.localhost`, `127.x.x.x`, `[::1]`, with any port), so a
 *   page of another site whose name was rebound to 127.0.0.1 (DNS rebinding) is refused; with `exposeLocalRoutes`
 *   any `Host` goes,
 * - its `Origin`, when sent, is the service's own (the same scheme-less host and port as its `Host`): a page of
 *   another origin is refused even for a simple request,
 * - a request with a body sends it as `application/json`, which a cross-origin page cannot send without a preflight
 *   (the service never answers one).
 *
 * Source: docs/ASSUMPTIONS.md "Local service".
 *
 * @since 0.1.0
 */

/**
 * Why a request to `/_local` is refused: `NotLoopback` (answered 404, as if there were no such route), `Foreign` (a
 * foreign `Host` or `Origin`: 403), `NotJson` (a body that is not JSON: 400).
 */
export type Refusal =
  | { readonly _tag: "NotLoopback" | "Foreign" | "NotJson"; readonly message: string }
  | undefined

/** The parts of a request the guard looks at (header names in lower case). */
export interface GuardedRequest {
  readonly method: string
  readonly remoteAddress: string | undefined
  readonly headers: Readonly<Record<string, string | undefined>>
}

/** True for a loopback address as a socket reports it (`127.x.x.x`, `::1`, `::ffff:127.x.x.x`). */
export const isLoopbackAddress = (address: string | undefined): boolean =>
  address !== undefined && (address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127."))

/** The host name of a `Host` header value without its port (`[::1]:80` → `::1`), lower case. */
const hostName = (host: string): string => {
  const value = host.trim().toLowerCase()
  if (value.startsWith("[")) return value.slice(1, value.indexOf("]") === -1 ? undefined : value.indexOf("]"))
  // A bare IPv6 address (as `--host` takes it) has more than one colon and no port.
  if (value.indexOf(":") !== value.lastIndexOf(":")) return value
  const colon = value.lastIndexOf(":")
  return colon === -1 ? value : value.slice(0, colon)
}

/**
 * True when a host names this machine's loopback interface: a `Host` header (with or without its port) or a listening
 * host (`localhost`, `*.localhost`, `127.x.x.x`, `::1`, `[::1]`).
 */
export const isLoopbackHost = (host: string | undefined): boolean => {
  if (host === undefined || host.trim() === "") return false
  const name = hostName(host)
  return name === "localhost" || name.endsWith(".localhost") || name === "::1" || /^127(\.\d{1,3}){3}$/.test(name)
}

/** The host (with port) of an `Origin` value, or undefined when it is not an http(s) origin. */
const originHost = (origin: string): string | undefined => {
  try {
    const url = new URL(origin)
    return url.protocol === "http:" || url.protocol === "https:" ? url.host : undefined
  } catch {
    return undefined
  }
}

/** Checks a request to `/_local`; the reason it is refused, or undefined. */
export const check = (request: GuardedRequest, options: { readonly exposeLocalRoutes?: boolean } = {}): Refusal => {
  const exposed = options.exposeLocalRoutes === true
  if (!exposed && !isLoopbackAddress(request.remoteAddress)) {
    return { _tag: "NotLoopback", message: "Local routes are served on loopback only." }
  }
  const host = request.headers.host
  if (!exposed && !isLoopbackHost(host)) {
    return { _tag: "Foreign", message: "Local routes answer only to a loopback Host (localhost, 127.0.0.1, [::1])." }
  }
  const origin = request.headers.origin
  if (origin !== undefined && (host === undefined || originHost(origin) !== host.trim().toLowerCase())) {
    return { _tag: "Foreign", message: "Local routes answer only to the service's own pages: this Origin is another site." }
  }
  const hasBody = request.method !== "GET" && request.method !== "HEAD"
  const contentType = (request.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase()
  if (hasBody && contentType !== "application/json") {
    return { _tag: "NotJson", message: "Local routes take application/json bodies only." }
  }
  return undefined
}
