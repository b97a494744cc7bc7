// The baseline of the strict consumer's tsc time: the same compiler flags on a program that uses the peers only.
import { Sse } from "@effect/experimental"
import { HttpClient } from "@effect/platform"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect } from "effect"

export const program = Effect.flatMap(HttpClient.HttpClient, (client) => client.get("http://127.0.0.1:8787/v1"))
export const run = program.pipe(Effect.provide(NodeHttpClient.layerUndici))
export const channel = Sse.makeChannel
