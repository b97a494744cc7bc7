/**
 * The error model of the Box Service HTTP API: the envelope, one tagged error class per error `type`, and the
 * client-side errors that no envelope carries (transport, timeout, decoding, unknown type).
 *
 * Source: spec section "Errors" (envelope fields, status table, rules 1-5); the status chosen for
 * "idempotent request still in flight" is recorded in docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
export * from "./ApiError/Errors.js"
export * from "./ApiError/Wire.js"
