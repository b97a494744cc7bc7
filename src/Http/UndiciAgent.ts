/**
 * The undici agent of the toolkit's `HttpClient` (UndiciHttpClient.ts): keep-alive connections per origin, made on
 * the first request (so a layer that never sends anything opens nothing), closed with the layer's scope.
 *
 * @since 0.1.0
 */
import type * as Undici from "@effect/platform-node/Undici"
import { Effect, type Scope } from "effect"

/**
 * Connections per origin of {@link makeAgent} (concurrent requests beyond this wait for a free connection).
 *
 * @since 0.1.0
 * @category Constants
 */
export const defaultConnections = 128

/**
 * Options of {@link makeAgent}.
 *
 * @since 0.1.0
 * @category Models
 */
export interface AgentOptions {
  /** Connections per origin at most (default {@link defaultConnections}). */
  readonly connections?: number
  /** Idle keep-alive of a connection, in milliseconds (default undici's, 4 000). */
  readonly keepAliveTimeoutMillis?: number
}

/**
 * What {@link make} needs of a dispatcher: undici's `request` with a callback (answers whose body is read as it
 * comes), and `dispatch` (answers read whole, {@link readWhole}). Every undici `Dispatcher` (`Agent`, `Pool`,
 * `Client`, `MockAgent`) has both.
 *
 * @since 0.1.0
 * @category Models
 */
export interface RequestDispatcher {
  request(
    options: Undici.Dispatcher.RequestOptions,
    callback: (error: Error | null, data: Undici.Dispatcher.ResponseData) => void
  ): void
  dispatch(options: Undici.Dispatcher.DispatchOptions, handler: Undici.Dispatcher.DispatchHandler): boolean
}

/**
 * An undici `Agent` made on the first request: undici (a large module) is imported then, not when the program
 * starts. Requests sent while it loads wait for it, in order.
 */
class AgentOnFirstRequest implements RequestDispatcher {
  private agent: Undici.Agent | undefined = undefined
  private loading: Promise<Undici.Agent> | undefined = undefined
  private destroyed = false

  constructor(private readonly options: AgentOptions) {}

  private load(): Promise<Undici.Agent> {
    return this.loading ??= import("@effect/platform-node/Undici").then((undici) => {
      this.agent = new undici.Agent({
        connections: this.options.connections ?? defaultConnections,
        pipelining: 1,
        ...(this.options.keepAliveTimeoutMillis === undefined ? {} : { keepAliveTimeout: this.options.keepAliveTimeoutMillis })
      })
      return this.agent
    })
  }

  request(
    options: Undici.Dispatcher.RequestOptions,
    callback: (error: Error | null, data: Undici.Dispatcher.ResponseData) => void
  ): void {
    if (this.agent !== undefined) return this.agent.request(options, callback)
    if (this.destroyed) return callback(new Error("The HTTP client's agent is closed."), undefined as never)
    this.load().then(
      (agent) => agent.request(options, callback),
      (error) => callback(error instanceof Error ? error : new Error(String(error)), undefined as never)
    )
  }

  dispatch(options: Undici.Dispatcher.DispatchOptions, handler: Undici.Dispatcher.DispatchHandler): boolean {
    if (this.agent !== undefined) return this.agent.dispatch(options, handler)
    if (this.destroyed) {
      handler.onResponseError?.(undefined as never, new Error("The HTTP client's agent is closed."))
      return true
    }
    this.load().then(
      (agent) => agent.dispatch(options, handler),
      (error) => handler.onResponseError?.(undefined as never, error instanceof Error ? error : new Error(String(error)))
    )
    return true
  }

  /** Destroys the agent's connections (when it was made); later requests fail. */
  destroy(): Promise<void> {
    this.destroyed = true
    return this.loading === undefined ? Promise.resolve() : this.loading.then((agent) => agent.destroy())
  }
}

/**
 * A keep-alive undici `Agent` for the toolkit, closed (its connections destroyed) when the scope closes. No
 * pipelining: one request per connection at a time, so a slow answer never holds up another. The agent (and undici)
 * is made when the first request is sent.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const makeAgent = (options: AgentOptions = {}): Effect.Effect<RequestDispatcher, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => new AgentOnFirstRequest(options)),
    (agent) => Effect.promise(() => agent.destroy())
  )
