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
 * A template whose values are all plain parameters compiles to the same SQL each time it runs: its SQL is compiled
 * by `@effect/sql` the first time and kept by the template's strings, and later statements of it give that SQL and
 * their values without compiling (the same text each time, which SqliteClient.ts also finds its prepared statement
 * by). A statement with a fragment, a helper or an identifier among its values is compiled as usual.
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

type StatementInstance = Omit<Statement.Statement<unknown>, "compile"> & StatementFields & {
  commit(): Effect.Effect<ReadonlyArray<unknown>, unknown>
  compile(withoutTransform?: boolean): readonly [sql: string, params: ReadonlyArray<unknown>]
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
 * True when `segments` are the template's strings and `args`, each a plain parameter, in order (no fragment, helper or
 * identifier among the values): then the statement's SQL depends on its template alone.
 */
const onlyParameters = (segments: ReadonlyArray<Statement.Segment>, args: ReadonlyArray<unknown>): boolean => {
  let next = 0
  for (const segment of segments) {
    if (segment._tag === "Parameter") {
      if (next >= args.length || segment.value !== args[next]) return false
      next++
    } else if (segment._tag !== "Literal" || segment.params !== undefined) {
      return false
    }
  }
  return next === args.length
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
    /** What `compile` gives, when it is known without compiling (see {@link make}'s template tag). */
    compiled: readonly [sql: string, params: ReadonlyArray<unknown>] | undefined = undefined

    override compile(withoutTransform?: boolean): readonly [sql: string, params: ReadonlyArray<unknown>] {
      return this.compiled ?? super.compile(withoutTransform)
    }

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

  // The SQL of each template whose values were all plain parameters, by the template's strings (one object per place
  // in the source): such a statement compiles to the same SQL whatever its values, and to its values as parameters.
  const plainTemplates = new WeakMap<TemplateStringsArray, string>()
  const tag = (strings: TemplateStringsArray | string, ...args: Array<unknown>) => {
    const made = direct((client as unknown as (...input: Array<unknown>) => unknown)(strings, ...args))
    if (!(made instanceof Direct) || typeof strings === "string" || !onlyParameters(made.segments, args)) return made
    const sql = plainTemplates.get(strings)
    if (sql === undefined) plainTemplates.set(strings, made.compile()[0])
    else made.compiled = [sql, args]
    return made
  }
  const made = Object.assign(tag, client, {
    unsafe: (sql: string, params?: ReadonlyArray<unknown>) => direct(client.unsafe(sql, params))
  }) as unknown as SqlClient.SqlClient
  return Object.assign(made, { safe: made })
}
