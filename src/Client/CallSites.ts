/**
 * What a call of the transport is, for the context of the error it ends with (`ApiError.CallContext`): an operation
 * of the contract ({@link OperationSite}) or a request built by hand ({@link RawSite}). Worked out only when a call
 * fails.
 *
 * Source: docs/ASSUMPTIONS.md "Client" (the context of a failed call).
 *
 * @since 0.1.0
 */
import type { HttpClientRequest } from "@effect/platform"
import { BoxServiceApi } from "../Contract/Api.js"
import type { CallSite } from "./Call.js"
import * as ContractClient from "./ContractClient.js"

/**
 * `url` without its trailing slashes and its `/v1` version segment (the contract's paths carry it), e.g.
 * `http://127.0.0.1:8787/v1/` is `http://127.0.0.1:8787`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const origin = (url: string) => url.replace(/\/+$/, "").replace(/\/v1$/, "")

/**
 * The site of an operation of the contract: `group.name`, its method and its path (parameters URL-encoded).
 *
 * @since 0.1.0
 * @category Models
 */
export class OperationSite implements CallSite {
  constructor(private readonly group: string, private readonly name: string, private readonly request: object) {}
  describe() {
    const groups = BoxServiceApi.groups as Record<string, { readonly endpoints: Record<string, { readonly method: string }> }>
    const endpoint = groups[this.group].endpoints[this.name]
    const params = (this.request as { readonly path?: Readonly<Record<string, unknown>> }).path ?? {}
    const encoded: Record<string, string> = {}
    for (const key in params) encoded[key] = encodeURIComponent(String(params[key]))
    return {
      operation: `${this.group}.${this.name}`,
      method: endpoint.method,
      path: ContractClient.pathOf(BoxServiceApi, this.group, this.name)(encoded)
    }
  }
}

/**
 * The site of a request built by hand: the operation, the request's method, and its URL without `base` (the group's
 * address without `/v1`, as the contract's paths carry it) and without query.
 *
 * @since 0.1.0
 * @category Models
 */
export class RawSite implements CallSite {
  constructor(
    private readonly operation: string,
    private readonly request: HttpClientRequest.HttpClientRequest,
    private readonly base: string
  ) {}
  describe() {
    const url = this.request.url.replace(/[?#].*$/, "")
    const path = url.startsWith(this.base)
      ? url.slice(this.base.length)
      : URL.canParse(url)
      ? new URL(url).pathname
      : url
    return { operation: this.operation, method: this.request.method, path }
  }
}
