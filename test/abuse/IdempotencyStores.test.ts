/**
 * Remembered idempotent answers are bounded in memory and in SQLite, as a key holder who sends a new
 * `Idempotency-Key` with every failing create, many at once, would meet the bounds: per API key at most
 * `idempotencyKeys` keys and `idempotencyBytes` bytes of answers (past either a new key is refused with 429
 * `quota_exceeded_error` code `idempotency_keys` without running, exact under concurrency), and the remembered
 * answers' bytes count in the organization's `stored_bytes` usage: an answer whose recording would pass the
 * stored-bytes quota is not recorded (its key stays unsettled, a retry runs again), and an expired answer gives its
 * bytes back. The scenarios: test/support/RememberedAnswers.ts; PostgreSQL: IdempotencyPostgres.test.ts.
 *
 * Source: docs/ASSUMPTIONS.md "Quotas"; spec "Limits / Idempotency rules", "Errors" rules 1 and 3.
 */
import { describeStore } from "../support/RememberedAnswers.js"

describeStore("memory")
describeStore("sqlite")
