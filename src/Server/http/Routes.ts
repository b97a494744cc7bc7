/**
 * The contract's routes as a table the request pipeline can match before routing: method, path pattern, path
 * parameter names, whether the endpoint honours `Idempotency-Key`, its body limit and the byte caps of its body's
 * members. Derived from the `HttpApi`, never written by hand.
 *
 * @since 0.1.0
 */
import { HttpApi } from "@effect/platform"
import { Context, Option } from "effect"
import { BoxServiceApi, defaultMaxBodyBytes, Idempotent, MaxBodyBytes, MemberByteCaps } from "../../Contract/Api.js"
import type * as Json from "../../Domain/Json.js"

/**
 * One route of the contract. `name` is `group.endpoint`, e.g. `boxes.create`; `maxBodyBytes` is the operation's body
 * limit (`MaxBodyBytes`, default `defaultMaxBodyBytes`).
 */
export interface Route {
  readonly name: string
  readonly method: string
  readonly pattern: RegExp
  readonly pathParameters: ReadonlyArray<string>
  readonly idempotent: boolean
  /**
   * True when the request's writes and its remembered idempotent answer are stored as one unit of work
   * (Transactions.ts), so that a crash in between never leaves a resource made without its answer: the create-box
   * operation (`Idempotency-Key` on create exists to make one box per key). Other operations keep their writes
   * separate: upgrade waits out the simulated restart and a model response can run for long, and a unit of work
   * holds the SQLite writer while it runs.
   */
  readonly atomic: boolean
  readonly maxBodyBytes: number
  /**
   * The byte caps of the body's bounded top-level members (`MemberByteCaps` in the contract; none when the endpoint
   * declares none), checked before the body is parsed.
   */
  readonly memberCaps: Json.MemberCaps
}

/** The operations whose writes and remembered answer are one unit of work (see {@link Route} `atomic`). */
export const atomicOperations: ReadonlySet<string> = new Set(["boxes.create"])

const compile = (path: string): { pattern: RegExp; pathParameters: Array<string> } => {
  const pathParameters: Array<string> = []
  const source = path.split("/").map((segment) => {
    if (segment.startsWith(":")) {
      pathParameters.push(segment.slice(1).replace(/\?$/, ""))
      return "[^/]+"
    }
    return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  }).join("/")
  return { pattern: new RegExp(`^${source}$`), pathParameters }
}

const noCaps: Json.MemberCaps = {}

/** Every route of {@link BoxServiceApi}. */
export const routes: ReadonlyArray<Route> = (() => {
  const table: Array<Route> = []
  HttpApi.reflect(BoxServiceApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group, mergedAnnotations }) => {
      const fullPath = String(endpoint.path)
      const annotations = Context.merge(mergedAnnotations, endpoint.annotations)
      table.push({
        name: `${group.identifier}.${endpoint.name}`,
        method: endpoint.method,
        ...compile(fullPath),
        idempotent: Context.getOption(annotations, Idempotent)._tag === "Some",
        atomic: atomicOperations.has(`${group.identifier}.${endpoint.name}`),
        maxBodyBytes: Option.getOrElse(Context.getOption(annotations, MaxBodyBytes), () => defaultMaxBodyBytes),
        memberCaps: Option.getOrElse(Context.getOption(annotations, MemberByteCaps), () => noCaps)
      })
    }
  })
  return table
})()

const byMethod = new Map<string, Array<Route>>()
for (const route of routes) {
  const list = byMethod.get(route.method) ?? []
  list.push(route)
  byMethod.set(route.method, list)
}

/** The route a request goes to, by method and path (without the query string). */
export const match = (method: string, path: string): Route | undefined =>
  byMethod.get(method)?.find((route) => route.pattern.test(path))
