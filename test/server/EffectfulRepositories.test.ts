/**
 * The repository interfaces are effectful only, with no synchronous twins a durable store could not honour
 * (docs/decisions/0002-what-the-fast-paths-save.md): an identity store whose every answer is asynchronous (as a
 * database's is) slots in through `LocalService.layerNode`'s `repositories` option, and both serving paths admit,
 * refuse and answer through it. The request pipeline keeps an index of recent callers in front of it
 * (`RequestPipeline.callerIndexMillis`): a known key asks the store once per period, an unknown key every time.
 */
import { describe, expect, it } from "@effect/vitest"
import { NodeHttpClient } from "@effect/platform-node"
import { Duration, Effect, Layer, Ref, TestClock } from "effect"
import * as LocalService from "../../src/Server/LocalService.js"
import * as RequestPipeline from "../../src/Server/pipeline/RequestPipeline.js"
import * as Repositories from "../../src/Server/state/Repositories.js"
import * as MemoryRepositories from "../../src/Server/state/MemoryRepositories.js"
import * as Harness from "../support/Harness.js"

/** Resolves on a later turn of Node's event loop: the store answers asynchronously, never in the same tick. */
const later = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** The in-memory identity store behind an asynchronous boundary, counting `findKey` calls. */
const asyncIdentity = (lookups: Ref.Ref<number>) =>
  Layer.effect(
    Repositories.Identity,
    Effect.map(Repositories.Identity, (memory) => ({
      ...memory,
      findKey: (key) => Effect.zipRight(Effect.zipRight(Ref.update(lookups, (n) => n + 1), later), memory.findKey(key)),
      user: (id) => Effect.zipRight(later, memory.user(id)),
      organization: (id) => Effect.zipRight(later, memory.organization(id))
    }))
  ).pipe(Layer.provide(MemoryRepositories.identityMemory))

const repositoriesWith = (lookups: Ref.Ref<number>): Layer.Layer<Repositories.Repositories> =>
  Layer.mergeAll(
    asyncIdentity(lookups),
    MemoryRepositories.appsMemory,
    MemoryRepositories.secretsMemory,
    MemoryRepositories.egressPoliciesMemory,
    MemoryRepositories.boxesMemory,
    MemoryRepositories.runtimeVersionMemory,
    MemoryRepositories.tcpAddressesMemory,
    MemoryRepositories.responsesMemory,
    MemoryRepositories.logsMemory
  )

const post = (baseUrl: string, key: string) =>
  Effect.promise(() =>
    fetch(`${baseUrl}/apps/find`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "effectful-store", mint_if_missing: true })
    }).then(async (response) => ({ status: response.status, body: await response.json() as { error?: { type: string } } }))
  )

describe.each(["fast", "platform"] as const)("an asynchronous identity store, %s serving path", (server) => {
  /** The service over the asynchronous store, built in the test (so the pipeline's clock is the test's). */
  const withService = <A, E>(use: (baseUrl: string, lookups: Ref.Ref<number>) => Effect.Effect<A, E>) =>
    Effect.gen(function*() {
      const lookups = yield* Ref.make(0)
      const context = yield* Layer.build(
        LocalService.layerNode(Harness.seed, { server, repositories: repositoriesWith(lookups) }).pipe(
          Layer.provide(NodeHttpClient.layerUndici)
        )
      )
      const baseUrl = yield* Effect.provide(LocalService.baseUrl, context)
      return yield* use(baseUrl, lookups)
    })

  it.scoped("admits a known key through it, then from the index until the index period has passed", () =>
    withService((baseUrl, lookups) =>
      Effect.gen(function*() {
        expect((yield* post(baseUrl, "sk_acme_org")).status).toBe(200)
        expect((yield* post(baseUrl, "sk_acme_org")).status).toBe(200)
        expect(yield* Ref.get(lookups)).toBe(1)
        yield* TestClock.adjust(Duration.millis(RequestPipeline.callerIndexMillis + 1))
        expect((yield* post(baseUrl, "sk_acme_org")).status).toBe(200)
        expect(yield* Ref.get(lookups)).toBe(2)
      })))

  it.scoped("refuses an unknown key with 401 and asks the store again each time (unknown keys are not kept)", () =>
    withService((baseUrl, lookups) =>
      Effect.gen(function*() {
        const first = yield* post(baseUrl, "sk_nobody")
        expect(first.status).toBe(401)
        expect(first.body.error?.type).toBe("authentication_error")
        expect((yield* post(baseUrl, "sk_nobody")).status).toBe(401)
        expect(yield* Ref.get(lookups)).toBe(2)
      })))

  it.scoped("answers 402 for an organization without credits, found through it", () =>
    withService((baseUrl) =>
      Effect.gen(function*() {
        const refused = yield* post(baseUrl, "sk_broke_org")
        expect(refused.status).toBe(402)
        expect(refused.body.error?.type).toBe("billing_error")
        // A user-scoped key: the organization comes from the user, also asked asynchronously.
        expect((yield* post(baseUrl, "sk_ada_personal")).status).toBe(200)
      })))
})
