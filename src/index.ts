/**
 * boxkit: an Effect toolkit for the Box Service HTTP API. This entry point is the client: one service per API area,
 * the layers that compose them, every error class, and the schemas of every resource. The local box service lives
 * behind `boxkit/local` and the test layer behind `boxkit/testing`, so a program that only uses the client never
 * loads them. Every module is also its own subpath (`boxkit/Boxes`, `boxkit/Responses`, ...).
 *
 * @since 0.1.0
 */

// The services, one per API area; `yield* Boxes` gives its methods.
/**
 * Apps: find an app by name, minting it when asked (spec "POST {api_url}/apps/find").
 *
 * @since 0.1.0
 * @category Services
 */
export { Apps } from "./Client/Apps.js"
/** Boxes: create, read, wait for, upgrade and end boxes (spec "Boxes"). @since 0.1.0 @category Services */
export { Boxes } from "./Client/Boxes.js"
/** Clipboard: put text or an image on a box's clipboard (spec "Clipboard"). @since 0.1.0 @category Services */
export { Clipboard } from "./Client/Clipboard.js"
/** Egress policies: create and rename (spec "Egress policies"). @since 0.1.0 @category Services */
export { EgressPolicies } from "./Client/EgressPolicies.js"
/** Exec: resize an exec's terminal (spec "Exec"). @since 0.1.0 @category Services */
export { Exec } from "./Client/Exec.js"
/** Listeners: publish and unpublish a box's ports, add domains (spec "Listeners"). @since 0.1.0 @category Services */
export { Listeners } from "./Client/Listeners.js"
/**
 * Model responses: foreground, background, streamed, read, awaited (spec "POST {api_url}/responses").
 *
 * @since 0.1.0
 * @category Services
 */
export { Responses } from "./Client/Responses.js"
/** Secrets: create and read (never the value) (spec "Secrets"). @since 0.1.0 @category Services */
export { Secrets } from "./Client/Secrets.js"

/**
 * The client's settings (`BOX_API_KEY`, `BOX_BASE_URL`, `BOX_API_URL`) as a service.
 *
 * @since 0.1.0
 * @category Services
 */
export { BoxkitConfig } from "./Client/BoxkitConfig.js"
/** Options and settings of the client. @since 0.1.0 @category Models */
export type { BoxkitOptions, BoxkitSettings, RetrySettings } from "./Client/BoxkitConfig.js"

/**
 * Every client service in one layer: `Boxkit.layer(options)`, `Boxkit.layerConfig()`.
 *
 * @since 0.1.0
 * @category Client modules
 */
export * as Boxkit from "./Client/Boxkit.js"
/**
 * A completion-webhook receiver for daemons (spec "Events / Completion webhook").
 *
 * @since 0.1.0
 * @category Client modules
 */
export * as WebhookReceiver from "./Client/WebhookReceiver.js"
/** The retry Schedules and what is retried. @since 0.1.0 @category Client modules */
export * as Retry from "./Client/Retry.js"
/**
 * The shared transport: `withRetry` (per-call retries), `withResponse` (status, headers).
 *
 * @since 0.1.0
 * @category Client modules
 */
export * as Transport from "./Client/Transport.js"
/**
 * Idempotency keys on the client (`Idempotent` results, `Idempotent-Replayed`).
 *
 * @since 0.1.0
 * @category Client modules
 */
export * as IdempotencyKey from "./Client/IdempotencyKey.js"
/** The toolkit's own undici `HttpClient` (what `Boxkit.layer` runs on). @since 0.1.0 @category Client modules */
export * as UndiciHttpClient from "./Http/UndiciHttpClient.js"

// Every error the client can fail with, found together.
/**
 * The errors of the API, one class per error `type` (spec "Errors"), and the client's own.
 *
 * @since 0.1.0
 * @category Errors
 */
export {
  AuthenticationError,
  BillingError,
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  NotImplementedError,
  PermissionError,
  QuotaExceededError,
  RateLimitError,
  ServerError,
  TimeoutError,
  TransportError,
  UnexpectedResponseError,
  UnknownApiError
} from "./ApiError.js"
/**
 * What each operation can fail with, as named unions of the classes above: `CallError` (every operation: the
 * `CommonError`s every endpoint lists and the client's own `ClientError`s), `BoxesCreateError`,
 * `BoxesTransitionError`, `BoxesUpgradeError`, `ListenersError`, `ClipboardWriteError`, `ResponsesCreateError`,
 * `CountQuotaError`; `OperationErrors` maps
 * each operation to its union. @since 0.1.0
 * @category Errors
 */
export type {
  BoxesCreateError,
  BoxesTransitionError,
  BoxesUpgradeError,
  CallError,
  ClientError,
  ClipboardWriteError,
  CommonError,
  CountQuotaError,
  ListenersError,
  OperationError,
  OperationErrors,
  ResponsesCreateError
} from "./Client/Operation.js"
/** Waiting for a box: it failed, or the wait ran past its deadline. @since 0.1.0 @category Errors */
export { BoxFailedError, WaitTimeoutError } from "./Client/Boxes.js"
/**
 * Waiting for a model response: its result expired, or the wait ran past its deadline.
 *
 * @since 0.1.0
 * @category Errors
 */
export { ResponseExpiredError, ResponseWaitTimeoutError } from "./Client/Responses.js"
/** The error model: the envelope, every error class, helpers (`ApiError.isApiError`). @since 0.1.0 @category Errors */
export * as ApiError from "./ApiError.js"

// Schemas of every resource.
/**
 * Identifiers (`sb_`, `app_`, `ep_`/`hp_` + UUID), branded; `Ids.BoxId.make("sb_...")` checks one.
 *
 * @since 0.1.0
 * @category Schemas
 */
export * as Ids from "./Domain/Ids.js"
/** Box schemas: create request, box record, status, upgrade and unpublish results. @since 0.1.0 @category Schemas */
export * as Box from "./Domain/Box.js"
/** App schemas. @since 0.1.0 @category Schemas */
export * as App from "./Domain/App.js"
/** Secret schemas. @since 0.1.0 @category Schemas */
export * as Secret from "./Domain/Secret.js"
/** Egress policy schemas. @since 0.1.0 @category Schemas */
export * as EgressPolicy from "./Domain/EgressPolicy.js"
/** Model response schemas. @since 0.1.0 @category Schemas */
export * as ModelResponse from "./Domain/ModelResponse.js"
/** The HTTP contract (`HttpApi`) the client and the local service are derived from. @since 0.1.0 @category Contract */
export * as Api from "./Contract/Api.js"
