/**
 * The seed file of the local service: organizations, users, API keys, secrets, egress policies and apps to start
 * with. `boxkit serve --seed FILE` loads it; the demo builds its own.
 *
 * Source: docs/ASSUMPTIONS.md "Local service" and "Authentication and scopes (local service)"; the format as the
 * README shows it ("The local box service"). Unknown fields are an error at start-up, with the path of the field.
 *
 * @since 0.1.0
 */
import { FileSystem } from "@effect/platform"
import { Effect, Schema } from "effect"
import * as ParseIssues from "../../ParseIssues.js"

/**
 * An organization: `credits: false` makes it answer 402; `created_at` decides whether it is new (first 10 minutes).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SeedOrganization = Schema.Struct({
  id: Schema.String.pipe(Schema.minLength(1)),
  credits: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  created_at: Schema.optional(Schema.String.pipe(
    Schema.filter((text) => !Number.isNaN(Date.parse(text)) || "created_at must be an ISO 8601 date-time")
  ))
}).annotations({ identifier: "organization" })

/** A user of an organization; `admin` users may use the owner override. @since 0.1.0 @category Schemas */
export const SeedUser = Schema.Struct({
  id: Schema.String.pipe(Schema.minLength(1)),
  org_id: Schema.String,
  admin: Schema.optionalWith(Schema.Boolean, { default: () => false })
}).annotations({ identifier: "user" })

/**
 * An API key. With `org_id` it is organization-scoped; with `user_id` too it is also user-scoped; without `org_id`
 * it is not organization-scoped (403 on box operations).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SeedApiKey = Schema.Struct({
  key: Schema.String.pipe(Schema.minLength(1)),
  org_id: Schema.optional(Schema.String),
  user_id: Schema.optional(Schema.String)
}).annotations({ identifier: "api key" })

/** A secret with its value (the value is never returned by the service). @since 0.1.0 @category Schemas */
export const SeedSecret = Schema.Struct({ org_id: Schema.String, name: Schema.String, value: Schema.String })
  .annotations({ identifier: "secret" })

/**
 * A saved egress policy of `org_id`: its `id` (the service's own are `ep_` or `hp_` + UUID), `name` and `document`
 * (a JSON object, decoded as a policy document when the seed is applied).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SeedEgressPolicy = Schema.Struct({
  id: Schema.String.pipe(Schema.minLength(1)),
  org_id: Schema.String,
  name: Schema.String,
  document: Schema.Record({ key: Schema.String, value: Schema.Unknown })
}).annotations({ identifier: "egress policy" })

/**
 * An app of `org_id`: its `id` (the service's own are `app_` + UUID) and `name` (the first app of a name in an
 * organization is kept).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SeedApp = Schema.Struct({ id: Schema.String.pipe(Schema.minLength(1)), org_id: Schema.String, name: Schema.String })
  .annotations({ identifier: "app" })

/**
 * The whole seed file (`boxkit serve --seed FILE`, README "The local box service"): organizations, users, API keys,
 * secrets, egress policies and apps, every array optional (empty when missing). Unknown fields are errors
 * ({@link decode}).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Seed = Schema.Struct({
  organizations: Schema.optionalWith(Schema.Array(SeedOrganization), { default: () => [] }),
  users: Schema.optionalWith(Schema.Array(SeedUser), { default: () => [] }),
  api_keys: Schema.optionalWith(Schema.Array(SeedApiKey), { default: () => [] }),
  secrets: Schema.optionalWith(Schema.Array(SeedSecret), { default: () => [] }),
  egress_policies: Schema.optionalWith(Schema.Array(SeedEgressPolicy), { default: () => [] }),
  apps: Schema.optionalWith(Schema.Array(SeedApp), { default: () => [] })
}).annotations({ identifier: "seed" })
/** The decoded seed. @since 0.1.0 @category Models */
export type Seed = typeof Seed.Type
/** The seed as written in the file. @since 0.1.0 @category Models */
export type SeedInput = typeof Seed.Encoded

/**
 * The seed file could not be read or does not match the format: `path` is the file, `issues` each problem as
 * `path: message` (`organizations[0].id: expected string, got 5`), and `message` says it in one line
 * (`invalid seed file FILE: …; …` or `cannot read seed file FILE: …`).
 *
 * @since 0.1.0
 * @category Errors
 */
export class SeedError extends Schema.TaggedError<SeedError>()("SeedError", {
  message: Schema.String,
  path: Schema.String,
  issues: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] })
}) {}

/**
 * Decodes a seed object; unknown fields are errors (`onExcessProperty: "error"`), reported with their path.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const decode = (input: unknown, path = "<seed>"): Effect.Effect<Seed, SeedError> =>
  Schema.decodeUnknown(Seed, { onExcessProperty: "error", errors: "all" })(input).pipe(
    Effect.mapError((error) => {
      const issues = ParseIssues.lines(error, "")
      return new SeedError({ path, message: `invalid seed file ${path}: ${issues.join("; ")}`, issues })
    })
  )

/**
 * Reads a JSON file for the seed of `boxkit serve --seed` (a seed, or a snapshot: Snapshot.ts). Fails with
 * `SeedError` when the file cannot be read or is not JSON.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const readJson = (path: string): Effect.Effect<unknown, SeedError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(path).pipe(
      Effect.mapError((error) =>
        new SeedError({
          path,
          message: `cannot read seed file ${path}: ${
            error._tag === "SystemError" && error.reason === "NotFound" ? "no such file" : error.message
          }`
        })
      )
    )
    return yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (error) =>
        new SeedError({ path, message: `seed file ${path} is not JSON: ${error instanceof Error ? error.message : String(error)}` })
    })
  })

/**
 * Reads and decodes a seed file (JSON, as {@link decode}). Fails with `SeedError` when the file cannot be read, is not
 * JSON, or does not match the format.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const load = (path: string): Effect.Effect<Seed, SeedError, FileSystem.FileSystem> =>
  Effect.flatMap(readJson(path), (json) => decode(json, path))

/**
 * A seed with no records (every array empty): a service on it answers every key 401.
 *
 * @since 0.1.0
 * @category Constants
 */
export const empty: Seed = {
  organizations: [],
  users: [],
  api_keys: [],
  secrets: [],
  egress_policies: [],
  apps: []
}
