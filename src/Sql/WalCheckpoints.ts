/**
 * Checkpoints of a SQLite file's write-ahead log on a thread of their own. SQLite checkpoints the log in the thread
 * that commits, once the log passes its `wal_autocheckpoint` (1,000 pages by default): the checkpoint copies the
 * log's pages into the database file and syncs both files, and the commit returns only after it. On the service's
 * one connection that stops every request for the length of two file syncs, again every hundred or so commits.
 * Here a worker thread opens the same file and runs `PRAGMA wal_checkpoint(PASSIVE)` every
 * {@link checkpointInterval} (a passive checkpoint never waits for the writer and never blocks it), and the
 * connection's own checkpoints are made rarer ({@link connectionAutocheckpointPages}): they then find the log's
 * pages copied already, and they still bound the log where the worker cannot keep up (a checkpoint empties the log
 * only when no commit came since it began, which a steady stream of writes prevents).
 *
 * The worker loads the `libsql` driver the process loaded (found in Node's module cache, so it is the same file);
 * without it, or when the thread cannot start, the connection checkpoints as SQLite does by default.
 *
 * Source: docs/decisions/0003-sqlite-client.md "Checkpoints of the log".
 *
 * @since 0.1.0
 */
import { Duration, Effect } from "effect"
import { createRequire } from "node:module"
import { join } from "node:path"
import { Worker } from "node:worker_threads"

/** How often the worker checkpoints the log. */
export const checkpointInterval = Duration.millis(100)

/**
 * The log size, in pages, at which the connection itself checkpoints while the worker runs (SQLite's
 * `wal_autocheckpoint`; its default is 1,000): about 16 MB of log at 4 KiB pages.
 */
export const connectionAutocheckpointPages = 4000

/** How long closing waits for the worker to close its connection and end. */
const closeTimeout = Duration.seconds(5)

/**
 * The worker: opens `workerData.path` with the driver at `workerData.driver`, checkpoints every
 * `workerData.intervalMillis`, and on any message closes its connection and ends. A failed checkpoint is left for
 * the next one (the file is busy or going away).
 */
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads")
const Database = require(workerData.driver)
const database = new Database(workerData.path)
const checkpoint = database.prepare("PRAGMA wal_checkpoint(PASSIVE)")
const timer = setInterval(() => {
  try { checkpoint.all() } catch {}
}, workerData.intervalMillis)
parentPort.once("message", () => {
  clearInterval(timer)
  database.close()
  parentPort.close()
})
`

/** The entry file of the `libsql` driver in Node's module cache (loaded by this process), if any. */
export const loadedDriverFile = (): string | undefined =>
  Object.keys(createRequire(join(process.cwd(), "noop.js")).cache).find((file) => /[\\/]libsql[\\/]index\.js$/.test(file))

/**
 * Starts the worker for the SQLite file at `path` (already open in WAL mode) with the driver at `driver`; closing
 * the scope stops it (its connection closed, at most {@link closeTimeout} waited for) before the caller's own
 * connection closes. Never fails: a thread that cannot start or that fails leaves the checkpoints to the connection.
 */
export const run = (path: string, driver: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      try {
        const worker = new Worker(workerSource, {
          eval: true,
          workerData: { path, driver, intervalMillis: Duration.toMillis(checkpointInterval) },
          resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1 }
        })
        const ended = { value: false }
        // An error ends the thread; the connection's own checkpoints remain.
        worker.on("error", () => {})
        worker.once("exit", () => ended.value = true)
        worker.unref()
        return { worker, ended }
      } catch {
        return undefined
      }
    }),
    (started) =>
      started === undefined || started.ended.value ? Effect.void : Effect.async<void>((resume) => {
        started.worker.once("exit", () => resume(Effect.void))
        started.worker.postMessage("close")
      }).pipe(
        Effect.timeoutTo({ duration: closeTimeout, onSuccess: () => Effect.void, onTimeout: () => Effect.promise(() => started.worker.terminate()) }),
        Effect.flatten
      )
  )
