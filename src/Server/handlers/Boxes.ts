/**
 * Handlers of the boxes group: create (every field rule of the spec), read, upgrade by state, and the lifecycle
 * operations pause, resume, sleep and terminate.
 *
 * Source: spec "Create a box", "POST {base_url}/boxes/{box_id}/upgrade", "States and transitions", "Authentication"
 * 2, 3, 7. Paths and the lifecycle operations' shapes: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Clock, type Context, Effect, Option } from "effect"
import * as ApiError from "../../ApiError.js"
import { BoxServiceApi, OwnerOverrideHeader } from "../../Contract/Api.js"
import { Principal } from "../../Contract/Principal.js"
import * as Box from "../../Domain/Box.js"
import * as BoxLifecycle from "../../Domain/BoxLifecycle.js"
import { usesSecrets } from "../../Domain/EgressPolicy.js"
import { AppId, BoxId, mint } from "../../Domain/Ids.js"
import { operate, requireOrganization } from "../boxes/BoxAccess.js"
import { LocalServiceConfig, type LocalServiceSettings } from "../LocalServiceConfig.js"
import * as Quotas from "../Quotas.js"
import { baseImageOf, baseImages, BoxRuntime } from "../boxes/BoxRuntime.js"
import * as ListenerPolicy from "../boxes/ListenerPolicy.js"
import * as HandlerGroups from "../http/HandlerGroups.js"
import {
  Apps,
  type BoxRecord,
  Boxes,
  EgressPolicies,
  type ListenerRecord,
  noListeners,
  noTerminalSizes,
  TcpAddresses
} from "../state/Repositories.js"

/** A listener as the API returns it: `custom_domains` only for http ports. */
export const toListener = (record: ListenerRecord): Box.Listener => ({
  guest_port: record.guest_port,
  protocol: record.protocol,
  address: record.address,
  ...(record.protocol === "http" ? { custom_domains: [...record.customDomains] } : {})
})

/** The box record as the API returns it (validated when stored: not validated again; the encoder checks it). */
export const toBox = (record: BoxRecord): Box.Box =>
  new Box.Box({
    box_id: BoxId.make(record.id, true),
    status: record.status,
    ...(record.errorMessage !== undefined ? { error_message: record.errorMessage } : {}),
    name: record.name,
    app_id: AppId.make(record.appId, true),
    size: record.size,
    vcpus: record.vcpus,
    memory_limit_gib: record.memoryLimitGib,
    state_disk_limit_gib: record.stateDiskLimitGib,
    max_lifetime_seconds: record.maxLifetimeSeconds,
    visibility: record.visibility,
    egress_policy: record.egressPolicy as Box.Box["egress_policy"],
    listeners: record.listeners.map(toListener),
    guest_schema_version: record.guestSchemaVersion,
    created_at: new Date(record.createdAtMillis).toISOString()
  }, true)

const conflict = (message: string) => ApiError.make.conflict(message, "failed_precondition")

/** The 409 of an operation the box's status refuses (BoxLifecycle.transition). */
const refused = (box: { readonly id: string; readonly status: string }, transition: { readonly reason: string }) =>
  conflict(`Box ${box.id} is ${box.status}; ${transition.reason}.`)

/**
 * The image of every box of one base image, shared by their records (records are immutable; the service boots
 * only bare base images).
 */
const baseImageSpecs: Readonly<Record<string, Box.ImageSpec>> = Object.fromEntries(
  Object.keys(baseImages).map((base) => [base, Object.freeze({ base })])
)

/** What the boxes handlers use, read once when the group is built. */
interface BoxServices {
  readonly boxes: Context.Tag.Service<Boxes>
  readonly apps: Context.Tag.Service<Apps>
  readonly policies: Context.Tag.Service<EgressPolicies>
  readonly tcpAddresses: Context.Tag.Service<TcpAddresses>
  readonly runtime: Context.Tag.Service<BoxRuntime>
  readonly config: LocalServiceSettings
}

/**
 * The egress policy a create request gives its box: a saved policy's id (404 when the organization has none of
 * that id; ListenerPolicy's no network at creation), an inline document (400 when it uses secrets), or none.
 */
const egressPolicyOf = (policies: Context.Tag.Service<EgressPolicies>, orgId: string, payload: Box.CreateBoxRequest) =>
  Effect.gen(function*() {
    if (typeof payload.egress_policy === "string") {
      const saved = yield* policies.get(orgId, payload.egress_policy)
      if (Option.isNone(saved)) {
        return yield* Effect.fail(ApiError.make.notFound(
          `egress_policy: no egress policy ${payload.egress_policy} in this organization.`,
          "egress_policy"
        ))
      }
      yield* ListenerPolicy.refuseNoNetworkAtCreation(saved.value.document, payload.ingress_ports?.length ?? 0)
      return payload.egress_policy
    }
    if (payload.egress_policy !== undefined && usesSecrets(payload.egress_policy)) {
      return yield* Effect.fail(ApiError.make.invalidRequest(
        "egress_policy.rules: an inline egress policy cannot use secrets; save it as a policy first and pass its id.",
        "egress_policy.rules"
      ))
    }
    return payload.egress_policy ?? null
  })

/** The 400 of a create request's image: it needs an image build, or names an unknown base image; else undefined. */
const imageRefusalOf = (payload: Box.CreateBoxRequest) => {
  if (Box.needsImageBuild(payload.image)) {
    return ApiError.make.invalidRequest(
      "image: this image requires an image build first (build steps, environment variables, a Python version, " +
        "systemd, a registry image or a Dockerfile); building needs an SDK or the command-line tool.",
      "image"
    )
  }
  if (baseImageOf(payload.image.base) === undefined) {
    return ApiError.make.invalidRequest(
      `image.base: unknown base image ${JSON.stringify(payload.image.base)}; the local service knows ${
        Object.keys(baseImages).join(", ")
      }.`,
      "image.base"
    )
  }
  return undefined
}

/** The 400 naming the first `ingress_ports[i].guest_port` listed a second time; undefined when each is listed once. */
const repeatedPortRefusalOf = (payload: Box.CreateBoxRequest) => {
  const ports = new Set<number>()
  for (const [index, port] of (payload.ingress_ports ?? []).entries()) {
    if (ports.has(port.guest_port)) {
      return ApiError.make.invalidRequest(
        `ingress_ports[${index}].guest_port: port ${port.guest_port} is listed twice.`,
        `ingress_ports[${index}].guest_port`
      )
    }
    ports.add(port.guest_port)
  }
  return undefined
}

/** Creates a box in `creating` and starts its boot (spec "Create a box"). */
const createBox = (services: BoxServices, payload: Box.CreateBoxRequest) =>
  Effect.gen(function*() {
    const { apps, boxes, config, tcpAddresses } = services
    const principal = yield* Principal
    const orgId = yield* requireOrganization(principal)
    const visibility = payload.visibility ?? "org"
    if (visibility === "private" && principal.userId === null) {
      return yield* Effect.fail(ApiError.make.permission("Creating a private box needs a user-scoped API key."))
    }
    const app = yield* apps.get(orgId, payload.app_id)
    if (Option.isNone(app)) {
      return yield* Effect.fail(ApiError.make.notFound(`app_id: no app ${payload.app_id} in this organization.`, "app_id"))
    }
    const imageRefusal = imageRefusalOf(payload)
    if (imageRefusal !== undefined) return yield* Effect.fail(imageRefusal)
    const image = baseImageOf(payload.image.base)!
    if ((payload.ingress_ports?.length ?? 0) > 0) {
      yield* ListenerPolicy.requirePersistence(image.persistent, `The image ${payload.image.base}`, "ingress_ports")
    }
    const egressPolicy = yield* egressPolicyOf(services.policies, orgId, payload)
    const repeatedPort = repeatedPortRefusalOf(payload)
    if (repeatedPort !== undefined) return yield* Effect.fail(repeatedPort)
    const boxId = mint<string>("sb_")
    const listeners: Array<ListenerRecord> = []
    for (const port of payload.ingress_ports ?? []) {
      listeners.push(yield* ListenerPolicy.takeListener(tcpAddresses, orgId, boxId, port))
    }
    const resources = Box.resolveResources(payload)
    const record: BoxRecord = {
      id: boxId,
      orgId,
      creatorKeyId: principal.keyId,
      creatorUserId: principal.userId,
      name: payload.name,
      appId: app.value.id,
      image: baseImageSpecs[payload.image.base!] ?? payload.image,
      size: resources.size,
      vcpus: resources.vcpus,
      memoryLimitGib: resources.memory_limit_gib,
      stateDiskLimitGib: resources.state_disk_limit_gib,
      maxLifetimeSeconds: payload.max_lifetime_seconds ?? null,
      visibility,
      egressPolicy,
      listeners: listeners.length === 0 ? noListeners : listeners,
      status: "creating",
      errorMessage: undefined,
      guestSchemaVersion: null,
      pendingUpgrade: false,
      createdAtMillis: yield* Clock.currentTimeMillis,
      persistent: image.persistent,
      hasClipboard: image.clipboard,
      clipboard: null,
      terminalSizes: noTerminalSizes,
      bootCount: 0
    }
    if (!(yield* boxes.insertWithinQuota(record, config.quotas.boxes))) {
      // Refused by the boxes quota: what the request took is given back, and nothing else was written.
      yield* ListenerPolicy.releaseAddresses(tcpAddresses, orgId, listeners)
      return yield* Effect.fail(Quotas.boxesExceeded(config.quotas, (yield* boxes.usage(orgId)).activeBoxes))
    }
    yield* services.runtime.boot(boxId)
    return { box_id: BoxId.make(boxId, true), status: record.status }
  })

/** The answer of an upgrade: `applied`, and the runtime version when it was applied to a booted box. */
const upgradeResult = (record: BoxRecord, applied: boolean): Box.UpgradeResult => ({
  box_id: BoxId.make(record.id, true),
  status: record.status,
  applied,
  ...(applied && record.guestSchemaVersion !== null
    ? { guest_schema_version: record.guestSchemaVersion }
    : {})
})

/** Moves a box onto the current runtime by its status (spec "POST {base_url}/boxes/{box_id}/upgrade"). */
const upgradeBox = (services: BoxServices, boxId: string, reason: string | undefined) =>
  Effect.gen(function*() {
    const principal = yield* Principal
    return yield* operate(principal, boxId, "upgrade", reason, "accepts", (box) =>
      Effect.gen(function*() {
        const current = yield* services.runtime.currentVersion
        if (box.guestSchemaVersion === null || box.guestSchemaVersion === current) {
          // Already current, or not booted yet (it will boot on the current runtime): nothing left to apply.
          return upgradeResult(box, true)
        }
        const next = BoxLifecycle.transition(box.status, "upgrade")
        switch (next._tag) {
          case "Restart": {
            const restarted = yield* services.runtime.restart(box.id)
            return upgradeResult(Option.getOrElse(restarted, () => box), true)
          }
          case "Pending": {
            const recorded = yield* services.boxes.update(box.id, (record) => ({ ...record, pendingUpgrade: true }))
            return upgradeResult(Option.getOrElse(recorded, () => box), false)
          }
          case "Refused":
            return yield* Effect.fail(refused(box, next))
          default:
            return yield* Effect.dieMessage(`BoxLifecycle: upgrade gave ${next._tag}`)
        }
      }))
  })

/** Pauses, resumes or puts a box to sleep, as its status allows (spec "States and transitions"). */
const moveBox = (
  services: BoxServices,
  boxId: string,
  reason: string | undefined,
  operation: "pause" | "resume" | "sleep"
) =>
  Effect.gen(function*() {
    const principal = yield* Principal
    return yield* operate(principal, boxId, operation, reason, "accepts", (box) =>
      Effect.gen(function*() {
        const next = BoxLifecycle.transition(box.status, operation)
        switch (next._tag) {
          case "Unchanged":
            return toBox(box)
          case "Wake":
            return toBox(yield* services.runtime.wake(box))
          case "Move": {
            const updated = yield* services.boxes.update(box.id, (record) => ({ ...record, status: next.to }))
            return toBox(Option.getOrElse(updated, () => box))
          }
          case "Refused":
            return yield* Effect.fail(refused(box, next))
          default:
            return yield* Effect.dieMessage(`BoxLifecycle: ${operation} gave ${next._tag}`)
        }
      }))
  })

/** The boxes handlers. */
export const layer = HandlerGroups.group(BoxServiceApi, "boxes", (handlers) =>
  Effect.gen(function*() {
    const services: BoxServices = {
      boxes: yield* Boxes,
      apps: yield* Apps,
      policies: yield* EgressPolicies,
      tcpAddresses: yield* TcpAddresses,
      runtime: yield* BoxRuntime,
      config: yield* LocalServiceConfig
    }
    return handlers
      .handle("create", ({ payload }) => createBox(services, payload))
      .handle("retrieve", ({ headers, path }) =>
        Effect.flatMap(Principal, (principal) =>
          operate(principal, path.box_id, "read", headers[OwnerOverrideHeader], "accepts", (box) =>
            Effect.succeed(toBox(box)))))
      .handle("upgrade", ({ headers, path }) => upgradeBox(services, path.box_id, headers[OwnerOverrideHeader]))
      .handle("pause", ({ headers, path }) => moveBox(services, path.box_id, headers[OwnerOverrideHeader], "pause"))
      .handle("resume", ({ headers, path }) => moveBox(services, path.box_id, headers[OwnerOverrideHeader], "resume"))
      .handle("sleep", ({ headers, path }) => moveBox(services, path.box_id, headers[OwnerOverrideHeader], "sleep"))
      .handle("terminate", ({ headers, path }) =>
        Effect.flatMap(Principal, (principal) =>
          operate(principal, path.box_id, "terminate", headers[OwnerOverrideHeader], "accepts", (box) =>
            Effect.map(services.runtime.terminate(box.id), (terminated) => toBox(Option.getOrElse(terminated, () => box))))))
  }))
