/**
 * Apps: the group of the boxes of one workload. Every box creation needs an app id.
 *
 * Source: spec "Resources and their fields / App", "POST {api_url}/apps/find".
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { AppId } from "./Ids.js"
import * as Text from "./Text.js"

/**
 * The App object: `id` (`app_` + UUID), `name`, `created_at` (Unix timestamp, seconds). Source: spec App.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class App extends Schema.Class<App>("App")({
  id: AppId,
  name: Schema.String,
  created_at: Schema.Int
}) {}

/**
 * Body of POST /apps/find: the app `name` (1 to 128 characters, a line of text: no control characters, line breaks or
 * unpaired surrogates; assumptions, docs/ASSUMPTIONS.md "Text fields") and `mint_if_missing` (create the app when it
 * does not exist, so the call is safe on every start). Source: spec "POST {api_url}/apps/find".
 *
 * @since 0.1.0
 * @category Schemas
 */
export const FindAppRequest = Schema.Struct({
  name: Schema.String.pipe(
    Schema.minLength(1, { message: () => "name must not be empty" }),
    Schema.maxLength(128, { message: () => "name must be at most 128 characters" }),
    Schema.filter((name) => Text.textLineProblem("name", name) ?? true, {
      jsonSchema: { pattern: Text.textLinePattern }
    })
  ),
  mint_if_missing: Schema.optional(Schema.Boolean)
}).annotations({ examples: [{ name: "my-app", mint_if_missing: true }] })
/** Body of POST /apps/find. @since 0.1.0 @category Models */
export type FindAppRequest = typeof FindAppRequest.Type
