/**
 * Statements of an `@effect/sql` client that run straight on their connection when nothing needs the stock path's
 * wrapping: `@effect/sql` runs every statement in a `sql.execute` span, with a scope for the connection it acquires
 * and a look-up of the transaction connection, which cost several times what SQLite takes for a point query on a
 * prepared statement (docs/decisions/0003-sqlite-client.md). The statements are built and compiled by `@effect/sql`
 * as usual (the same segments, the same compiler, the same SQL and parameters); only running one (yielding it)
 * differs:
 *
 * - under a span (the fiber has a `Tracer.ParentSpan`: a traced request, `LocalServiceConfig.requestTracing`) or
 *   with a statement transformer set (`Statement.currentTransformer`), the stock path runs, span and all;
 * - else the statement is compiled and handed to the connection `connectionOf` picks for the fiber, without a span.
 *
 * `raw` (a write's count of changed rows, read by Rows.ts `rowsAffectedOf`) runs the same way; `values`, `stream`
 * and the others run as stock.
 *
 * Source: docs/decisions/0003-sqlite-client.md.
 *
 * @since 0.1.0
 */
import { type SqlClient, type SqlConnection, type SqlError, Statement } from "@effect/sql"
import { Context, Effect, type FiberRef, type Scope, Tracer } from "effect"

/** The parts of `@effect/sql`'s statement class that are read here (public fields of its instances). */
interface StatementFields {
  readonly segments: ReadonlyArray<Statement.Segment>
  readonly acquirer: Effect.Effect<SqlConnection.Connection, SqlError.SqlError, Scope.Scope>
  readonly compiler: Statement.Compiler
  readonly spanAttributes: ReadonlyArray<readonly [string, unknown]>
  readonly transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
}

type StatementInstance = Statement.Statement<unknown> & StatementFields & {
  commit(): Effect.Effect<ReadonlyArray<unknown>, unknown>
}
type StatementClass = new(
  segments: StatementFields["segments"],
  acquirer: StatementFields["acquirer"],
  compiler: StatementFields["compiler"],
  spanAttributes: StatementFields["spanAttributes"],
  transformRows: StatementFields["transformRows"]
) => StatementInstance

/** A fiber as `Effect.withFiberRuntime` gives it (the two reads made here). */
interface FiberView {
  readonly currentContext: Context.Context<never>
  getFiberRef<A>(fiberRef: FiberRef.FiberRef<A>): A
}

/**
 * `client` whose statements (from its template tag and `unsafe`) run directly on the connection `connectionOf`
 * picks for the running fiber, as described above. Everything else of the client is kept.
 */
export const make = (
  client: SqlClient.SqlClient,
  connectionOf: (context: Context.Context<never>) => SqlConnection.Connection
): SqlClient.SqlClient => {
  const Stock = Object.getPrototypeOf(client.unsafe("SELECT 1")).constructor as StatementClass

  /** Whether the fiber needs the stock path: a statement transformer is set, or a span is open. */
  const needsStock = (fiber: FiberView) =>
    fiber.getFiberRef(Statement.currentTransformer)._tag === "Some" ||
    Context.getOption(fiber.currentContext, Tracer.ParentSpan)._tag === "Some"

  class Direct extends Stock {
    override commit(): Effect.Effect<ReadonlyArray<unknown>, unknown> {
      return Effect.withFiberRuntime((fiber: FiberView) => {
        if (needsStock(fiber)) return super.commit()
        const [sql, params] = this.compile()
        return connectionOf(fiber.currentContext).execute(sql, params, this.transformRows)
      })
    }

    override get raw(): Effect.Effect<unknown, SqlError.SqlError> {
      return Effect.withFiberRuntime((fiber: FiberView) => {
        if (needsStock(fiber)) return super.raw
        const [sql, params] = this.compile()
        return connectionOf(fiber.currentContext).executeRaw(sql, params)
      })
    }
  }

  const direct = <A>(made: A): A =>
    made instanceof Stock
      ? new Direct(made.segments, made.acquirer, made.compiler, made.spanAttributes, made.transformRows) as A
      : made
  const tag = (strings: TemplateStringsArray | string, ...args: Array<unknown>) =>
    direct((client as unknown as (...input: Array<unknown>) => unknown)(strings, ...args))
  const made = Object.assign(tag, client, {
    unsafe: (sql: string, params?: ReadonlyArray<unknown>) => direct(client.unsafe(sql, params))
  }) as unknown as SqlClient.SqlClient
  return Object.assign(made, { safe: made })
}
