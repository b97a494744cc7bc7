/**
 * Field rules over HTTP (spec: Create a box field table; GET secrets path rule; PATCH egress policy name; Egress
 * policy rule 3; DELETE listeners guest_port; PUT clipboard media types; exec resize `-` form; Errors 400 "the
 * message names the offending field or rule (... body too large)"). Every rejection is a 400 envelope whose message
 * names the field and whose `param` names it (path parameters: param null), and changes nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as C from "./support/Conformance.js"
import * as Routes from "../../src/Server/http/Routes.js"
import * as Harness from "../support/Harness.js"

const noNetworkPolicy = "ep_00000000-0000-4000-8000-0000000000cc"
const seed = C.seedWith({
  egress_policies: [{ id: noNetworkPolicy, org_id: "org_acme", name: "offline", document: { no_network: true } }]
})

/** A string of `count` code points of `unit`. */
const repeat = (unit: string, count: number) => unit.repeat(count)

/** A policy document whose compact JSON encoding is exactly `bytes` bytes. */
const documentOfBytes = (bytes: number) => {
  const document = { allowlist: ["a".repeat(bytes - 18)] }
  expect(Buffer.byteLength(JSON.stringify(document))).toBe(bytes)
  return document
}

interface Rejection {
  readonly label: string
  readonly body: unknown
  readonly param: string | null
  readonly status?: number
  readonly type?: string
}

/** Sends each case and checks the envelope, that the message names the field, and that nothing changed. */
const expectRejections = (send: (body: unknown) => C.Send, cases: ReadonlyArray<Rejection>) =>
  Effect.gen(function*() {
    const before = yield* C.state
    for (const rejection of cases) {
      const response = yield* send(rejection.body)
      expect({ label: rejection.label, status: response.status, type: response.json?.error?.type }).toEqual({
        label: rejection.label,
        status: rejection.status ?? 400,
        type: rejection.type ?? "invalid_request_error"
      })
      expect(response.json.error.param, rejection.label).toBe(rejection.param)
      if (rejection.param !== null) {
        const field = rejection.param.split(".").at(-1)!.replace(/\[\d+\]$/, "")
        expect(response.json.error.message, rejection.label).toContain(field)
      }
    }
    expect(yield* C.state).toEqual(before)
  })

const createBox = (body: unknown) => C.post("/v1/boxes", body)

describe.each(Harness.variants())("create box field rules ($name)", (variant) => {
  it.effect("name: 1 to 128 characters, with non-whitespace, no control characters; stored exactly as sent", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const { name: _, ...withoutName } = C.boxBody()
      yield* expectRejections(createBox, [
        { label: "missing", body: withoutName, param: "name" },
        { label: "empty", body: C.boxBody({ name: "" }), param: "name" },
        { label: "129 characters", body: C.boxBody({ name: repeat("n", 129) }), param: "name" },
        { label: "129 emoji", body: C.boxBody({ name: repeat("📦", 129) }), param: "name" },
        { label: "whitespace only", body: C.boxBody({ name: " \u00a0 " }), param: "name" },
        { label: "tab", body: C.boxBody({ name: "a\tb" }), param: "name" },
        { label: "line break", body: C.boxBody({ name: "a\nb" }), param: "name" },
        { label: "DEL", body: C.boxBody({ name: "a\u007f" }), param: "name" },
        { label: "C1 control", body: C.boxBody({ name: "a\u0085" }), param: "name" },
        { label: "not a string", body: C.boxBody({ name: 12 }), param: "name" }
      ])
      for (const name of ["x", "x", repeat("n", 128), repeat("📦", 128), "  surrounded by spaces  ", "ünïcödé ✓"]) {
        const created = yield* createBox(C.boxBody({ name }))
        expect(created.status, name).toBe(201)
        expect((yield* C.get(`/v1/boxes/${created.json.box_id}`)).json.name).toBe(name)
      }
    })))

  it.effect("app_id: at least 1 non-whitespace character, an app of the organization", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const { app_id: _, ...withoutApp } = C.boxBody()
      yield* expectRejections(createBox, [
        { label: "missing", body: withoutApp, param: "app_id" },
        { label: "empty", body: C.boxBody({ app_id: "" }), param: "app_id" },
        { label: "whitespace", body: C.boxBody({ app_id: "   " }), param: "app_id" },
        { label: "number", body: C.boxBody({ app_id: 5 }), param: "app_id" },
        {
          label: "unknown app",
          body: C.boxBody({ app_id: "app_00000000-0000-4000-8000-00000000ffff" }),
          param: "app_id",
          status: 404,
          type: "not_found_error"
        }
      ])
    })))

  it.effect("image: exactly one of base, oci, dockerfile; what needs an image build is refused saying so", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const { image: _, ...withoutImage } = C.boxBody()
      yield* expectRejections(createBox, [
        { label: "missing", body: withoutImage, param: "image" },
        { label: "none", body: C.boxBody({ image: {} }), param: "image" },
        { label: "two kinds", body: C.boxBody({ image: { base: "debian", oci: "nginx:1" } }), param: "image" },
        { label: "three kinds", body: C.boxBody({ image: { base: "debian", oci: "x", dockerfile: "FROM x" } }), param: "image" },
        { label: "not an object", body: C.boxBody({ image: "debian" }), param: "image" },
        { label: "empty base", body: C.boxBody({ image: { base: "" } }), param: "image.base" },
        { label: "unknown base", body: C.boxBody({ image: { base: "windows" } }), param: "image.base" },
        // Names of an object's own machinery are unknown images too, not properties looked up on a prototype.
        { label: "__proto__", body: C.boxBody({ image: { base: "__proto__" } }), param: "image.base" },
        { label: "constructor", body: C.boxBody({ image: { base: "constructor" } }), param: "image.base" },
        { label: "toString", body: C.boxBody({ image: { base: "toString" } }), param: "image.base" }
      ])
      const build: ReadonlyArray<unknown> = [
        { oci: "docker.io/library/nginx:latest" },
        { dockerfile: "FROM debian\nRUN true" },
        { base: "debian", build_steps: ["apt-get install -y curl"] },
        { base: "debian", env: { A: "1" } },
        { base: "debian", python_version: "3.12" },
        { base: "debian", systemd: true }
      ]
      const before = yield* C.state
      for (const image of build) {
        const response = yield* createBox(C.boxBody({ image }))
        C.expectError(response, 400, "invalid_request_error", { param: "image", message: /image build.*SDK/ })
      }
      expect(yield* C.state).toEqual(before)
    })))

  it.effect("max_lifetime_seconds: an integer 1 to 4294967295, or null", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      yield* expectRejections(createBox, [0, -1, 1.5, 4294967296, "60", true].map((value) => ({
        label: JSON.stringify(value),
        body: C.boxBody({ max_lifetime_seconds: value }),
        param: "max_lifetime_seconds"
      })))
      for (const value of [1, 4294967295, null]) {
        const created = yield* createBox(C.boxBody({ max_lifetime_seconds: value }))
        expect(created.status).toBe(201)
        expect((yield* C.get(`/v1/boxes/${created.json.box_id}`)).json.max_lifetime_seconds).toBe(value)
      }
    })))

  it.effect("size and the size-dependent memory and state-disk ranges, with their defaults", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const ranges = {
        s: { memory: [2, 64, 16], disk: [8, 128, 32], vcpus: 1 },
        m: { memory: [8, 128, 32], disk: [32, 512, 128], vcpus: 4 },
        l: { memory: [16, 256, 64], disk: [64, 1024, 256], vcpus: 8 }
      } as const
      const rejections: Array<Rejection> = [{ label: "size xl", body: C.boxBody({ size: "xl" }), param: "size" }]
      for (const [size, range] of Object.entries(ranges)) {
        for (const memory of [range.memory[0] - 1, range.memory[1] + 1, 8.5]) {
          rejections.push({ label: `${size} memory ${memory}`, body: C.boxBody({ size, memory_limit_gib: memory }), param: "memory_limit_gib" })
        }
        for (const disk of [range.disk[0] - 1, range.disk[1] + 1]) {
          rejections.push({ label: `${size} disk ${disk}`, body: C.boxBody({ size, state_disk_limit_gib: disk }), param: "state_disk_limit_gib" })
        }
      }
      // Without a size the ranges of the default size m apply.
      rejections.push({ label: "default size memory 7", body: C.boxBody({ memory_limit_gib: 7 }), param: "memory_limit_gib" })
      yield* expectRejections(createBox, rejections)
      for (const [size, range] of Object.entries(ranges)) {
        const defaults = yield* createBox(C.boxBody({ size }))
        expect((yield* C.get(`/v1/boxes/${defaults.json.box_id}`)).json).toMatchObject({
          size,
          vcpus: range.vcpus,
          memory_limit_gib: range.memory[2],
          state_disk_limit_gib: range.disk[2]
        })
        for (const [memory, disk] of [[range.memory[0], range.disk[0]], [range.memory[1], range.disk[1]]]) {
          const created = yield* createBox(C.boxBody({ size, memory_limit_gib: memory, state_disk_limit_gib: disk }))
          expect(created.status).toBe(201)
        }
      }
      const unsized = yield* createBox(C.boxBody())
      expect((yield* C.get(`/v1/boxes/${unsized.json.box_id}`)).json).toMatchObject({
        size: "m",
        memory_limit_gib: 32,
        state_disk_limit_gib: 128
      })
    })))

  it.effect("visibility: org (default) or private", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      yield* expectRejections(createBox, [
        { label: "public", body: C.boxBody({ visibility: "public" }), param: "visibility" },
        { label: "null", body: C.boxBody({ visibility: null }), param: "visibility" }
      ])
      const created = yield* createBox(C.boxBody())
      expect((yield* C.get(`/v1/boxes/${created.json.box_id}`)).json.visibility).toBe("org")
    })))

  it.effect("egress_policy: a saved policy id or an inline document (at most 64 KiB, no secrets); no_network excludes ingress_ports", () =>
    C.withServiceOn(variant, {}, seed)(Effect.gen(function*() {
      expect(Buffer.byteLength(JSON.stringify({ extra: "a".repeat(65537 - 12) }))).toBe(65537)
      yield* expectRejections(createBox, [
        { label: "malformed id", body: C.boxBody({ egress_policy: "ep_123" }), param: "egress_policy" },
        { label: "other prefix", body: C.boxBody({ egress_policy: C.policyId.replace("ep_", "xp_") }), param: "egress_policy" },
        { label: "number", body: C.boxBody({ egress_policy: 7 }), param: "egress_policy" },
        {
          label: "unknown id",
          body: C.boxBody({ egress_policy: "hp_00000000-0000-4000-8000-00000000ffff" }),
          param: "egress_policy",
          status: 404,
          type: "not_found_error"
        },
        { label: "bad member", body: C.boxBody({ egress_policy: { no_network: "yes" } }), param: "egress_policy.no_network" },
        { label: "bad allowlist", body: C.boxBody({ egress_policy: { allowlist: "x" } }), param: "egress_policy.allowlist" },
        { label: "65537 bytes", body: C.boxBody({ egress_policy: documentOfBytes(65537) }), param: "egress_policy" },
        {
          label: "65537 bytes with unknown members",
          body: C.boxBody({ egress_policy: { extra: "a".repeat(65537 - 12) } }),
          param: "egress_policy"
        },
        {
          label: "inline secrets",
          body: C.boxBody({ egress_policy: { rules: { "api.github.com": { headers: { authorization: { secret: "GITHUB_TOKEN" } } } } } }),
          param: "egress_policy.rules"
        },
        {
          label: "inline no_network with ingress_ports",
          body: C.boxBody({ egress_policy: { no_network: true }, ingress_ports: [{ guest_port: 80 }] }),
          param: "ingress_ports"
        },
        {
          label: "saved no_network with ingress_ports",
          body: C.boxBody({ egress_policy: noNetworkPolicy, ingress_ports: [{ guest_port: 80 }] }),
          param: "ingress_ports"
        }
      ])
      for (const egressPolicy of [C.policyId, {}, documentOfBytes(65536), { no_network: true }]) {
        expect((yield* createBox(C.boxBody({ egress_policy: egressPolicy }))).status).toBe(201)
      }
      expect((yield* createBox(C.boxBody({ egress_policy: { no_network: false }, ingress_ports: [{ guest_port: 80 }] }))).status).toBe(201)
    })))

  it.effect("ingress_ports: guest_port 1 to 65535, protocol http or tcp, no port twice", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      yield* expectRejections(createBox, [
        ...[0, 65536, -80, 80.5, "80", null].map((port) => ({
          label: `port ${JSON.stringify(port)}`,
          body: C.boxBody({ ingress_ports: [{ guest_port: port }] }),
          param: "ingress_ports[0].guest_port"
        })),
        { label: "udp", body: C.boxBody({ ingress_ports: [{ guest_port: 80, protocol: "udp" }] }), param: "ingress_ports[0].protocol" },
        {
          label: "twice",
          body: C.boxBody({ ingress_ports: [{ guest_port: 80 }, { guest_port: 80, protocol: "tcp" }] }),
          param: "ingress_ports[1].guest_port"
        },
        { label: "not an array", body: C.boxBody({ ingress_ports: { guest_port: 80 } }), param: "ingress_ports" }
      ])
      const created = yield* createBox(C.boxBody({ ingress_ports: [{ guest_port: 1 }, { guest_port: 65535, protocol: "tcp" }] }))
      expect(created.status).toBe(201)
    })))

  it.effect("a body that is not a JSON object is a 400 (param null)", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const before = yield* C.state
      for (const body of ["", "[]", "null", "42", "\"box\"", "{", "{\"name\": }", "\u0000"]) {
        const response = yield* C.request("/v1/boxes", { method: "POST", headers: C.auth(), body })
        C.expectError(response, 400, "invalid_request_error", { param: null, message: /body/ })
      }
      expect(yield* C.state).toEqual(before)
    })))
})

describe.each(Harness.variants())("other field rules ($name)", (variant) => {
  it.effect("box ids in paths match sb_ + UUID: anything else is a 400 naming box_id, with param null", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      for (const boxId of ["sb_123", "sb_" + "0".repeat(36), "xb_00000000-0000-4000-8000-000000000001", "sb_00000000-0000-4000-8000-00000000000g"]) {
        C.expectError(yield* C.get(`/v1/boxes/${boxId}`), 400, "invalid_request_error", { param: null, message: /box_id/ })
        C.expectError(yield* C.post(`/v1/boxes/${boxId}/pause`, undefined), 400, "invalid_request_error", { param: null })
      }
      C.expectError(yield* C.get(`/v1/boxes/${C.unknownBoxId}`), 404, "not_found_error")
    })))


  it.effect("secret name path rule: surrounding whitespace ignored; a violation is 400 with param and code null", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      for (const path of ["GITHUB_TOKEN", "%20GITHUB_TOKEN%20", "%09GITHUB_TOKEN", "GITHUB_TOKEN%20%20"]) {
        expect((yield* C.get(`/v1/secrets/${path}`)).json.name, path).toBe("GITHUB_TOKEN")
      }
      // Valid names reach the lookup (the router passes long path parameters on): 404 for a secret that is not there.
      for (const name of ["a", "9", repeat("a", 128), "a-b_c", "A" + "_".repeat(127), `${"%20".repeat(20)}${repeat("b", 128)}%20`]) {
        C.expectError(yield* C.get(`/v1/secrets/${name}`), 404, "not_found_error", { message: /No secret named/ })
      }
      for (const name of ["_a", "-a", repeat("a", 129), "a.b", "a%20b", "%C3%A9", "a%2Fb", "%20"]) {
        const response = yield* C.get(`/v1/secrets/${name}`)
        C.expectError(response, 400, "invalid_request_error", { param: null, code: null, message: /name/ })
      }
    })))

  it.effect("secret create: name rule and a string value", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      yield* expectRejections((body) => C.post("/v1/secrets", body), [
        { label: "bad name", body: { name: "_x", value: "v" }, param: "name" },
        { label: "long name", body: { name: repeat("x", 129), value: "v" }, param: "name" },
        { label: "value missing", body: { name: "X" }, param: "value" },
        { label: "value number", body: { name: "X", value: 5 }, param: "value" }
      ])
    })))

  it.effect("guest_port path parameter: an integer 1 to 65535, else 400 with param null", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox()
      for (const port of ["0", "65536", "-1", "1.5", "abc", "1e3", "0x50"]) {
        const response = yield* C.request(`/v1/boxes/${boxId}/listeners/${port}`, { method: "DELETE", headers: C.auth() })
        C.expectError(response, 400, "invalid_request_error", { param: null, message: /guest_port/ })
      }
      for (const port of ["1", "65535"]) {
        const response = yield* C.request(`/v1/boxes/${boxId}/listeners/${port}`, { method: "DELETE", headers: C.auth() })
        C.expectError(response, 404, "not_found_error")
      }
      yield* expectRejections((body) => C.post(`/v1/boxes/${boxId}/listeners`, body), [
        { label: "port 0", body: { guest_port: 0 }, param: "guest_port" },
        { label: "port 65536", body: { guest_port: 65536 }, param: "guest_port" },
        { label: "udp", body: { guest_port: 80, protocol: "udp" }, param: "protocol" }
      ])
      yield* C.post(`/v1/boxes/${boxId}/listeners`, { guest_port: 8080 })
      yield* expectRejections((body) => C.post(`/v1/boxes/${boxId}/listeners/8080/domains`, body), [
        { label: "missing", body: {}, param: "hostname" },
        { label: "one label", body: { hostname: "localhost" }, param: "hostname" },
        { label: "space", body: { hostname: "a b.example.com" }, param: "hostname" },
        { label: "leading dash", body: { hostname: "-a.example.com" }, param: "hostname" }
      ])
    })))

  it.effect("policy names: 1 to 128 characters after trimming, visible text, no control characters", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const rename = (body: unknown) =>
        C.request(`/v1/egress-policies/${C.policyId}`, { method: "PATCH", headers: C.auth(), body: JSON.stringify(body) })
      yield* expectRejections(rename, [
        { label: "missing", body: {}, param: "name" },
        { label: "empty", body: { name: "" }, param: "name" },
        { label: "spaces", body: { name: "    " }, param: "name" },
        { label: "129 after trimming", body: { name: ` ${repeat("p", 129)} ` }, param: "name" },
        { label: "tab", body: { name: "a\tb" }, param: "name" },
        { label: "trailing line break", body: { name: "name\n" }, param: "name" },
        { label: "invisible only", body: { name: "\u200b\u200d" }, param: "name" },
        { label: "not a string", body: { name: ["x"] }, param: "name" }
      ])
      for (const [sent, stored] of [["  x  ", "x"], [` ${repeat("p", 128)} `, repeat("p", 128)], ["📦", "📦"]]) {
        const renamed = yield* rename({ name: sent })
        expect(renamed.json.name).toBe(stored)
      }
      const badId = yield* C.request("/v1/egress-policies/ep_x", { method: "PATCH", headers: C.auth(), body: "{\"name\":\"a\"}" })
      C.expectError(badId, 400, "invalid_request_error", { param: null, message: /policy_id/ })
      const unknown = yield* C.request("/v1/egress-policies/hp_00000000-0000-4000-8000-00000000ffff", {
        method: "PATCH",
        headers: C.auth(),
        body: "{\"name\":\"a\"}"
      })
      C.expectError(unknown, 404, "not_found_error")
    })))

  it.effect("policy documents: at most 64 KiB encoded", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const create = (body: unknown) => C.post("/v1/egress-policies", body)
      yield* expectRejections(create, [
        { label: "65537 bytes", body: { name: "big", document: documentOfBytes(65537) }, param: "document" },
        { label: "not an object", body: { name: "x", document: [] }, param: "document" },
        { label: "missing", body: { name: "x" }, param: "document" }
      ])
      expect((yield* create({ name: "max", document: documentOfBytes(65536) })).status).toBe(201)
    })))

  it.effect("exec resize: the - form needs exec_request_id; cols and rows are integers 1 to 65535", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox()
      yield* expectRejections((body) => C.post(`/v1/boxes/${boxId}/exec/-/resize`, body), [
        { label: "no exec_request_id", body: { cols: 80, rows: 24 }, param: "exec_request_id" }
      ])
      yield* expectRejections((body) => C.post(`/v1/boxes/${boxId}/exec/-/resize?exec_request_id=`, body), [
        { label: "empty exec_request_id", body: { cols: 80, rows: 24 }, param: "exec_request_id" }
      ])
      yield* expectRejections((body) => C.post(`/v1/boxes/${boxId}/exec/e1/resize`, body), [
        { label: "cols 0", body: { cols: 0, rows: 24 }, param: "cols" },
        { label: "rows missing", body: { cols: 80 }, param: "rows" },
        { label: "rows 1.5", body: { cols: 80, rows: 1.5 }, param: "rows" }
      ])
    })))

  it.effect("apps/find: name 1 to 128 characters", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      yield* expectRejections((body) => C.post("/v1/apps/find", body), [
        { label: "missing", body: {}, param: "name" },
        { label: "empty", body: { name: "", mint_if_missing: true }, param: "name" },
        { label: "129", body: { name: repeat("a", 129), mint_if_missing: true }, param: "name" },
        { label: "mint flag", body: { name: "a", mint_if_missing: "yes" }, param: "mint_if_missing" }
      ])
    })))
})

describe.each(Harness.variants())("body size ($name)", (variant) => {
  it.effect("a body over the configured maximum gets a 400 envelope, not a dropped connection (with or without Content-Length)", () =>
    C.withServiceOn(variant, { maxBodyBytes: 1024 })(Effect.gen(function*() {
      const before = yield* C.state
      const oversized = JSON.stringify(C.boxBody({ name: "n", padding: "x".repeat(2048) }))
      for (const chunked of [false, true]) {
        const response = yield* C.request("/v1/boxes", { method: "POST", headers: C.auth(), body: oversized, chunked })
        C.expectError(response, 400, "invalid_request_error", { param: null, message: /too large/ })
      }
      expect(yield* C.state).toEqual(before)
      // Exactly the maximum is accepted, both ways.
      const base = JSON.stringify(C.boxBody({ padding: "" }))
      const exact = JSON.stringify(C.boxBody({ padding: "x".repeat(1024 - base.length) }))
      expect(Buffer.byteLength(exact)).toBe(1024)
      for (const chunked of [false, true]) {
        expect((yield* C.request("/v1/boxes", { method: "POST", headers: C.auth(), body: exact, chunked })).status).toBe(201)
      }
    })))

  it.effect("each operation has its own body limit (docs/ASSUMPTIONS.md): a policy rename takes 16 KiB, not 2 MiB", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const policy = yield* C.request("/v1/egress-policies", {
        method: "POST",
        headers: C.auth(),
        body: JSON.stringify({ name: "limits", document: { allow: ["example.com"] } })
      })
      expect(policy.status).toBe(201)
      const policyId = policy.json.id
      const padded = JSON.stringify({ name: "renamed", padding: "x".repeat(2 * 1024 * 1024) })
      for (const chunked of [false, true]) {
        const response = yield* C.request(`/v1/egress-policies/${policyId}`, {
          method: "PATCH",
          headers: C.auth(),
          body: padded,
          chunked
        })
        C.expectError(response, 400, "invalid_request_error", { param: null, message: /too large.*16384 bytes/ })
      }
      // A model response takes far more (a pre-tokenized prompt of 2,000,000 ids): 1 MiB of input is accepted.
      const input = "word ".repeat(200_000)
      const response = yield* C.request("/v1/responses", {
        method: "POST",
        headers: C.auth(),
        body: JSON.stringify({ model: "boxkit-local", input, max_output_tokens: 1 })
      })
      expect(response.status).toBe(200)
    })))

  it("the body limits come from the contract, one per operation", () => {
    const limits = Object.fromEntries(Routes.routes.map((route) => [route.name, route.maxBodyBytes]))
    expect(limits["responses.create"]).toBe(32 * 1024 * 1024)
    expect(limits["clipboard.write"]).toBe(8 * 1024 * 1024)
    expect(limits["boxes.create"]).toBe(128 * 1024)
    expect(limits["egressPolicies.rename"]).toBe(16 * 1024)
    expect(Object.values(limits).every((limit) => limit >= 16 * 1024)).toBe(true)
  })

  it.effect("the default maximum is 32 MiB", () =>
    Effect.sync(() => {
      // Importing the defaults keeps this test honest without sending 32 MiB.
      return import("../../src/Server/LocalServiceConfig.js").then((config) =>
        expect(config.defaults.maxBodyBytes).toBe(32 * 1024 * 1024)
      )
    }).pipe(Effect.flatMap((promise) => Effect.promise(() => promise))))
})
