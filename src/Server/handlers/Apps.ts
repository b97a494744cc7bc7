/**
 * Handlers of the apps group: POST /apps/find with `mint_if_missing` (one app per name per organization).
 *
 * Source: spec "POST {api_url}/apps/find"; the answer for a missing app without mint_if_missing (404) is in
 * docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import * as ApiError from "../../ApiError.js"
import { BoxServiceApi } from "../../Contract/Api.js"
import { Principal } from "../../Contract/Principal.js"
import { App } from "../../Domain/App.js"
import { AppId, mint } from "../../Domain/Ids.js"
import { actingOrganization } from "../boxes/BoxAccess.js"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import * as Quotas from "../Quotas.js"
import * as HandlerGroups from "../http/HandlerGroups.js"
import { type AppRecord, Apps } from "../state/Repositories.js"

/** The App object of each stored record (records are replaced, never changed in place). */
const appsOfRecords = new WeakMap<AppRecord, App>()

/**
 * The App object of a stored app, built once per record and registered with `HandlerGroups.encodeOnce`, so that
 * `POST /apps/find` (called on every start of every client) encodes each app once. The record was validated when it
 * was stored, so the class is built without validating it again (the contract's encoder still checks the answer).
 */
export const toApp = (record: AppRecord): App => {
  let app = appsOfRecords.get(record)
  if (app === undefined) {
    app = HandlerGroups.encodeOnce(
      new App({ id: AppId.make(record.id, true), name: record.name, created_at: record.createdAt }, true)
    )
    appsOfRecords.set(record, app)
  }
  return app
}

/** The apps handlers. */
export const layer = HandlerGroups.group(BoxServiceApi, "apps", (handlers) =>
  Effect.gen(function*() {
    const apps = yield* Apps
    const config = yield* LocalServiceConfig
    return handlers.handle("find", ({ payload }) =>
      Effect.gen(function*() {
        const orgId = yield* actingOrganization(yield* Principal)
        const existing = yield* apps.findByName(orgId, payload.name)
        if (Option.isSome(existing)) return toApp(existing.value)
        if (payload.mint_if_missing !== true) {
          return yield* Effect.fail(ApiError.make.notFound(
            `No app named ${JSON.stringify(payload.name)}; send mint_if_missing: true to create it.`,
            "name"
          ))
        }
        const createdAt = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        // A new app past the organization's `apps` quota is refused (Quotas.ts); one that exists is always found.
        const app = yield* apps.findOrCreateWithinQuota(orgId, payload.name, () => ({
          id: mint("app_"),
          orgId,
          name: payload.name,
          createdAt
        }), Quotas.countLimit(config.quotas, "apps"))
        if (Option.isNone(app)) return yield* Effect.fail(Quotas.countExceeded(config.quotas, "apps"))
        return toApp(app.value)
      }))
  }))
