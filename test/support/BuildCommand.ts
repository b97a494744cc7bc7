/**
 * Vitest's global setup: builds the `boxkit` command's bundle (dist/boxkit.cjs) once, before any worker starts, when
 * it is missing or older than the sources. Tests run the command through bin/boxkit.js, which would otherwise rebuild
 * a stale bundle in each worker at once. The package has no `prepare` script (npm would list it among the install
 * scripts of every user's install), so a fresh checkout gets its bundle here or from its first `npm start`.
 *
 * A build that fails (a source that does not compile yet) is reported and does not stop the run: the tests that run
 * the command rebuild it through bin/boxkit.js and fail with the build's error; the others run as usual.
 */
// @ts-expect-error scripts/build.mjs is plain JavaScript without declarations
import { ensureCommand } from "../../scripts/build.mjs"

export default async function setup(): Promise<void> {
  try {
    await ensureCommand()
  } catch (error) {
    process.stderr.write(`test/support/BuildCommand.ts: the command's bundle could not be built: ${String(error)}\n`)
  }
}
