/**
 * The contract's routes as a table the request pipeline can match before routing: method, path pattern, path
 * parameter names, and whether the endpoint honours `Idempotency-Key`. Derived from the `HttpApi`, never written by
 * hand.
 *
 * @since 0.1.0
 */
import { HttpApi } from "@effect/platform"
import { Context } from "effect"
import { BoxServiceApi, Idempotent } from "../../Contract/Api.js"

/** One route of the contract. `name` is `group.endpoint`, e.g. `boxes.create`. */
export interface Route {
  readonly name: string
  readonly method: string
  readonly pattern: RegExp
  readonly pathParameters: ReadonlyArray<string>
  readonly idempotent: boolean
}

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

/** Every route of {@link BoxServiceApi}. */
export const routes: ReadonlyArray<Route> = (() => {
  const table: Array<Route> = []
  HttpApi.reflect(BoxServiceApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group, mergedAnnotations }) => {
      const fullPath = String(endpoint.path)
      table.push({
        name: `${group.identifier}.${endpoint.name}`,
        method: endpoint.method,
        ...compile(fullPath),
        idempotent: Context.getOption(Context.merge(mergedAnnotations, endpoint.annotations), Idempotent)._tag === "Some"
      })
    }
  })
  return table
})()

/** The route a request goes to, by method and path (without the query string). */
export const match = (method: string, path: string): Route | undefined =>
  routes.find((route) => route.method === method && route.pattern.test(path))
