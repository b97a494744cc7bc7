/**
 * Activities made once per name and reused by every call, the call's input travelling in the context: an
 * `Activity.make` builds the schema of its result (an `Exit` of its success and error schemas), and decoding with a
 * new schema compiles a new decoder, which cost about as much as the engine's own work for a step that does nothing.
 * Building the activities of a workflow anew on every run (and every replay) paid that each time.
 *
 * Source: docs/decisions/0004-durable-orchestration.md ("Steps of a box workflow").
 *
 * @since 0.1.0
 */
import * as Activity from "@effect/workflow/Activity"
import { Context, Effect, type Schema } from "effect"

/**
 * A family of activities of one shape: `execute(input, name)` is the work of the activity named `name` on `input`.
 * Returns `(name, input) => activity`: the activity named `name` (made at its first use, then the same object),
 * with `input` provided. `key` names the family (unique among families). Success and failure as `success` and
 * `error`; the activity is replayed from storage like any other (the input is not stored: the same name must mean
 * the same work in one execution).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = <Input, Success extends Schema.Schema.Any, Error extends Schema.Schema.All, R>(options: {
  readonly key: string
  readonly success: Success
  readonly error: Error
  readonly execute: (input: Input, name: string) => Effect.Effect<Success["Type"], Error["Type"], R>
}) => {
  const CurrentInput = Context.GenericTag<{ readonly input: Input }>(`boxkit/workflow/ActivityTemplate/${options.key}`)
  const activityNamed = onePerName((name) =>
    Activity.make({
      name,
      success: options.success,
      error: options.error,
      execute: Effect.flatMap(CurrentInput, ({ input }) => options.execute(input, name))
    })
  )
  return (name: string, input: Input) => Effect.provideService(activityNamed(name), CurrentInput, { input })
}

/**
 * `make`, called once per name: the value made for a name is returned on every later call with it (for activities
 * and `DurableDeferred`s, whose schemas are best made once).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const onePerName = <A>(make: (name: string) => A): (name: string) => A => {
  const made = new Map<string, A>()
  return (name) => {
    let value = made.get(name)
    if (value === undefined) {
      value = make(name)
      made.set(name, value)
    }
    return value
  }
}
