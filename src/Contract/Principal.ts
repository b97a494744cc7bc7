/**
 * Who sent a request: the identity behind an API key, as the local service resolves it.
 *
 * Source: spec "Authentication" (organization-scoped and user-scoped keys, admins) and the seed file format of
 * docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Context } from "effect"

/**
 * The caller of one request. `keyId` identifies the API key without revealing it (a SHA-256 prefix);
 * `orgId` is the organization of an organization-scoped key (null for a key that is not organization-scoped);
 * `userId` is set for user-scoped keys; `organizationOfUser` is the organization the key acts in for areas that do not
 * need an organization-scoped key (apps, responses); `admin` is true for organization admins.
 *
 * @since 0.1.0
 * @category Models
 */
export interface PrincipalShape {
  readonly keyId: string
  readonly orgId: string | null
  readonly userId: string | null
  readonly organizationOfUser: string | null
  readonly admin: boolean
}

/**
 * The caller of the current request, in the request's context (the local service's request pipeline puts it
 * there; the `Authorization` middleware of the contract hands it to handlers).
 *
 * @since 0.1.0
 * @category Services
 */
export class Principal extends Context.Tag("boxkit/Principal")<Principal, PrincipalShape>() {}
