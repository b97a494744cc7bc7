/**
 * The toolkit's version, as its package.json gives it, and the `User-Agent` the client sends on every request.
 * `version` is a constant so that it holds in every build (the ES modules, CommonJS and the command's bundle) without
 * reading package.json at run time; scripts/build.mjs rewrites it when package.json's version differs, and a test
 * (test/client/RequestHeaders.test.ts) checks that the two agree.
 *
 * Source: docs/ASSUMPTIONS.md "Client" (User-Agent).
 *
 * @since 0.1.0
 */

/**
 * The toolkit's version, e.g. `"0.1.0"` (package.json's `version`).
 *
 * @since 0.1.0
 * @category Constants
 */
export const version = "0.1.0"

/**
 * The `User-Agent` header value of every request of the client: `boxkit/<version>`, e.g. `boxkit/0.1.0`. A
 * `User-Agent` given in `BoxkitOptions.headers` is sent instead.
 *
 * @since 0.1.0
 * @category Constants
 */
export const userAgent = `boxkit/${version}`
