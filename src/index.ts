/**
 * boxkit: an Effect toolkit for the Box Service HTTP API (client services, schemas, errors, the HTTP contract) and a
 * faithful local box service. Modules are exported as namespaces.
 *
 * @since 0.1.0
 */

/** The error model: the envelope and one tagged error per error `type` (spec: Errors). */
export * as ApiError from "./ApiError.js"
/** The HTTP contract (`HttpApi`) the client and the local service are derived from. */
export * as Api from "./Contract/Api.js"
/** The caller of a request, as the local service resolves it. */
export * as Principal from "./Contract/Principal.js"

/** Identifiers (`sb_`, `app_`, `ep_`/`hp_` + UUID). */
export * as Ids from "./Domain/Ids.js"
/** Box schemas: create request, box record, status, upgrade and unpublish results. */
export * as Box from "./Domain/Box.js"
/** App schemas. */
export * as App from "./Domain/App.js"
/** Secret schemas. */
export * as Secret from "./Domain/Secret.js"
/** Egress policy schemas. */
export * as EgressPolicy from "./Domain/EgressPolicy.js"
/** Model response schemas. */
export * as ModelResponse from "./Domain/ModelResponse.js"

/** Client configuration (`BOX_API_KEY`, `BOX_BASE_URL`, `BOX_API_URL`). */
export * as BoxkitConfig from "./Client/BoxkitConfig.js"
/** Every client service in one layer. */
export * as Boxkit from "./Client/Boxkit.js"
/** The shared transport (typed errors, retries, deadlines). */
export * as Transport from "./Client/Transport.js"
/** The retry Schedules. */
export * as Retry from "./Client/Retry.js"
/** Idempotency keys on the client. */
export * as IdempotencyKey from "./Client/IdempotencyKey.js"
/** The Apps service. */
export * as Apps from "./Client/Apps.js"
/** The Boxes service. */
export * as Boxes from "./Client/Boxes.js"
/** The Exec service. */
export * as Exec from "./Client/Exec.js"
/** The Listeners service. */
export * as Listeners from "./Client/Listeners.js"
/** The Clipboard service. */
export * as Clipboard from "./Client/Clipboard.js"
/** The Secrets service. */
export * as Secrets from "./Client/Secrets.js"
/** The EgressPolicies service. */
export * as EgressPolicies from "./Client/EgressPolicies.js"
/** The Responses service. */
export * as Responses from "./Client/Responses.js"
/** A completion-webhook receiver for daemons. */
export * as WebhookReceiver from "./Client/WebhookReceiver.js"

/** The local box service (layers, seed, inspection). */
export * as LocalService from "./Server/LocalService.js"
/** Settings of the local box service. */
export * as LocalServiceConfig from "./Server/LocalServiceConfig.js"
/** The seed file format of the local box service. */
export * as Seed from "./Server/Seed.js"
/** The model behind the local service's Responses area (the deterministic local model). */
export * as LanguageModel from "./Server/LanguageModel.js"
/** An adapter to any OpenAI-compatible upstream, as the model of the local service. */
export * as UpstreamModel from "./Server/UpstreamModel.js"
