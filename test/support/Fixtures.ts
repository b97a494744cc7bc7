/**
 * Fixtures shared by the client tests that script their own `HttpClient`: ids in the spec's formats and a box record
 * as `GET /boxes/{box_id}` answers it; a box record as the local service stores it.
 */
import { AppId, BoxId } from "../../src/Domain/Ids.js"
import * as Repositories from "../../src/Server/state/Repositories.js"

/** A box id (`sb_` + UUID). */
export const boxId = BoxId.make("sb_00000000-0000-4000-8000-0000000000aa")

/** An app id (`app_` + UUID), the seeded app's. */
export const appId = AppId.make("app_00000000-0000-4000-8000-000000000001")

/** A running box as `GET /boxes/{box_id}` answers it (JSON). */
export const boxRecord = {
  box_id: boxId,
  status: "running",
  name: "b",
  app_id: appId,
  size: "m",
  vcpus: 4,
  memory_limit_gib: 32,
  state_disk_limit_gib: 128,
  max_lifetime_seconds: null,
  visibility: "org",
  egress_policy: null,
  listeners: [],
  guest_schema_version: 1,
  created_at: "2026-11-22T10:00:00.000Z"
}

/** A box as the service stores it (running, organization `org`), with `overrides`. */
export const storedBox = (id: string, overrides: Partial<Repositories.BoxRecord> = {}): Repositories.BoxRecord => ({
  id,
  orgId: "org",
  creatorKeyId: "key",
  creatorUserId: null,
  name: id,
  appId: "app",
  image: { base: "debian" },
  size: "m",
  vcpus: 4,
  memoryLimitGib: 32,
  stateDiskLimitGib: 128,
  maxLifetimeSeconds: null,
  visibility: "org",
  egressPolicy: null,
  listeners: Repositories.noListeners,
  status: "running",
  errorMessage: undefined,
  guestSchemaVersion: 1,
  pendingUpgrade: false,
  createdAtMillis: 0,
  persistent: true,
  hasClipboard: true,
  clipboard: null,
  terminalSizes: Repositories.noTerminalSizes,
  bootCount: 1,
  ...overrides
})
