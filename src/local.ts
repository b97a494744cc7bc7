/**
 * boxkit/local: the local box service, the same API served faithfully on a simulated box runtime and a deterministic
 * local model, for offline development and tests. Its own entry point, so that a program that only uses the client
 * never loads it (nor the tokenizer of its model).
 *
 * Start it in-process with `LocalService.layerNode(seed, { port: 0 })` and read its address with
 * `LocalService.baseUrl`; for tests, `boxkit/testing` wires a client to it in one layer. `boxkit serve` runs it as a
 * daemon.
 *
 * @since 0.1.0
 */

/** The local box service: layers, seed, inspection. @since 0.1.0 @category Local service */
export * as LocalService from "./Server/LocalService.js"
/** Settings of the local box service (caps, lifetimes, faults). @since 0.1.0 @category Local service */
export * as LocalServiceConfig from "./Server/LocalServiceConfig.js"
/**
 * Where the local service keeps its state (in memory by default); the durable stores are in `boxkit/SqlState`
 * (SQLite, PostgreSQL), their own entry point so that the SQL clients load only when used. @since 0.1.0
 * @category Local service
 */
export * as StateStore from "./Server/state/StateStore.js"
/**
 * Quotas per organization of the local box service (boxes, background responses, stored bytes).
 *
 * @since 0.1.0
 * @category Local service
 */
export * as Quotas from "./Server/Quotas.js"
/** The seed file format of the local box service. @since 0.1.0 @category Seeds */
export * as Seed from "./Server/state/Seed.js"
/** The example seed (`org_acme`, keys `sk_acme_org`, `sk_acme_ada`, ...). @since 0.1.0 @category Seeds */
export * as DemoSeed from "./Server/state/DemoSeed.js"
/**
 * The snapshot of the local service's whole state (`"version": 1`): its schema, and reading a `--seed` file that is
 * a seed or a snapshot. @since 0.1.0 @category Seeds
 */
export * as Snapshot from "./Server/state/Snapshot.js"
/**
 * Taking a snapshot of the state in context and restoring one (`take`, `restore`), on every store. @since 0.1.0
 * @category Seeds
 */
export * as StateSnapshots from "./Server/state/StateSnapshots.js"
/**
 * The model behind the local service's Responses area (the deterministic local model).
 *
 * @since 0.1.0
 * @category Language models
 */
export * as LanguageModel from "./Server/responses/LanguageModel.js"
/**
 * An adapter to any OpenAI-compatible upstream, as the model of the local service.
 *
 * @since 0.1.0
 * @category Language models
 */
export * as UpstreamModel from "./Server/responses/UpstreamModel.js"
/** The caller of a request, as the local service resolves it. @since 0.1.0 @category Contract */
export * as Principal from "./Contract/Principal.js"
