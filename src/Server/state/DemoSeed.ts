/**
 * The seed the demo and the tests start the embedded local service with: the example of the seed format
 * (docs/ASSUMPTIONS.md), plus a second organization without credits and a new organization.
 *
 * @since 0.1.0
 */
import type * as Seed from "./Seed.js"

/**
 * The example seed: organization `org_acme` with admin `user_ada` and three keys of different scopes.
 *
 * @since 0.1.0
 * @category Constants
 */
export const example: Seed.SeedInput = {
  organizations: [
    { id: "org_acme", credits: true, created_at: "2026-01-01T00:00:00Z" },
    { id: "org_broke", credits: false, created_at: "2026-01-01T00:00:00Z" }
  ],
  users: [
    { id: "user_ada", org_id: "org_acme", admin: true },
    { id: "user_bob", org_id: "org_acme", admin: false }
  ],
  api_keys: [
    { key: "sk_acme_org", org_id: "org_acme" },
    { key: "sk_acme_ada", org_id: "org_acme", user_id: "user_ada" },
    { key: "sk_acme_bob", org_id: "org_acme", user_id: "user_bob" },
    { key: "sk_ada_personal", user_id: "user_ada" },
    { key: "sk_broke_org", org_id: "org_broke" }
  ],
  secrets: [{ org_id: "org_acme", name: "GITHUB_TOKEN", value: "s3cr3t" }],
  egress_policies: [
    { id: "ep_00000000-0000-4000-8000-000000000001", org_id: "org_acme", name: "default", document: {} }
  ],
  apps: [{ id: "app_00000000-0000-4000-8000-000000000001", org_id: "org_acme", name: "demo" }]
}
