/**
 * Remembered idempotent answers are bounded in PostgreSQL as in memory and SQLite: the scenarios of
 * test/support/RememberedAnswers.ts (keys and answer bytes per API key, exact under concurrency; answers counted in
 * the organization's stored bytes, not recorded past its quota, given back on expiry). Two instances on one database:
 * IdempotencyPostgresInstances.test.ts.
 *
 * Source: docs/ASSUMPTIONS.md "Quotas"; spec "Limits / Idempotency rules", "Errors" rules 1 and 3.
 */
import { beforeAll } from "@effect/vitest"
import * as Postgres from "../support/Postgres.js"
import { describeStore } from "../support/RememberedAnswers.js"

beforeAll(() => Postgres.startTestDatabase().then((database) => database.stop()), Postgres.startLimitMillis)

describeStore("postgres")
