/**
 * The client's Listeners service against the local service over HTTP (spec: DELETE listeners; publish and custom
 * domains: docs/ASSUMPTIONS.md): publish, add a custom domain, unpublish, with typed errors.
 */
import { describe, expect } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as ApiError from "../../src/ApiError.js"
import { Boxes } from "../../src/Client/Boxes.js"
import { Listeners } from "../../src/Client/Listeners.js"
import { AppId } from "../../src/Domain/Ids.js"
import * as Harness from "../support/Harness.js"
import { appId } from "./support/Conformance.js"
import { layer } from "../support/SuiteLayer.js"

describe.each(Harness.variants({ sqlite: true }))("$name", (variant) =>
layer(Harness.serviceWithClientOn(variant, "sk_acme_org", { bootDelay: Duration.millis(10) }), { excludeTestServices: true })(
  "Listeners client",
  (it) => {
    describe("publish, custom domains, unpublish", () => {
      it.effect("round trip with typed errors", () =>
        Effect.gen(function*() {
          const boxes = yield* Boxes
          const listeners = yield* Listeners
          const created = yield* boxes.create({ name: "ports", app_id: AppId.make(appId), image: { base: "debian" } })
          const boxId = created.value.box_id
          const http = yield* listeners.publish(boxId, 8080)
          expect(http).toMatchObject({ guest_port: 8080, protocol: "http", custom_domains: [] })
          const withDomain = yield* listeners.addDomain(boxId, 8080, "Docs.Example.com")
          expect(withDomain.custom_domains).toEqual(["docs.example.com"])
          const tcp = yield* listeners.publish(boxId, 5432, "tcp")
          expect(tcp.address).toMatch(/:\d+$/)
          const duplicate = yield* Effect.flip(listeners.publish(boxId, 8080))
          expect(duplicate).toBeInstanceOf(ApiError.ConflictError)
          if (duplicate instanceof ApiError.ConflictError) expect(duplicate.code).toBe("already_exists")
          const invalid = yield* Effect.flip(listeners.publish(boxId, 0))
          expect(invalid).toBeInstanceOf(ApiError.InvalidRequestError)
          const badHost = yield* Effect.flip(listeners.addDomain(boxId, 8080, "not a host"))
          expect(badHost).toBeInstanceOf(ApiError.InvalidRequestError)
          expect(yield* listeners.unpublish(boxId, 5432)).toEqual({ box_id: boxId, guest_port: 5432 })
          const box = yield* boxes.retrieve(boxId)
          expect(box.listeners.map((listener) => listener.guest_port)).toEqual([8080])
        }))
    })
  }
))
