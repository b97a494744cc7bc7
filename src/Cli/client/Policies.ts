/**
 * `boxkit policies create NAME [--allow HOST]…` (an egress policy whose document allows those hosts; without
 * `--allow`, a policy that allows nothing), `boxkit policies get POLICY_ID` and `boxkit policies rename POLICY_ID
 * NAME`.
 *
 * Source: spec "Egress policies"; docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { Effect } from "effect"
import { EgressPolicy } from "../../Domain/EgressPolicy.js"
import { EgressPolicyId } from "../../Domain/Ids.js"
import { clientOptions, help, withClient } from "./ClientOptions.js"
import { printResource } from "./Output.js"

const create = Command.make("create", {
  ...clientOptions,
  name: Args.text({ name: "NAME" }).pipe(Args.withDescription("The policy's name.")),
  allow: Options.text("allow").pipe(
    Options.repeated,
    Options.withPseudoName("HOST"),
    Options.withDescription("A host the policy allows, e.g. api.github.com.")
  )
}, (options) =>
  withClient(
    options,
    ({ EgressPolicies }) => Effect.flatMap(EgressPolicies, (policies) => policies.create(options.name, { allowlist: options.allow }))
  ).pipe(Effect.flatMap((policy) => printResource(EgressPolicy, policy, options)))).pipe(
    Command.withDescription(help(
      "Create an egress policy allowing the hosts given with --allow.",
      "boxkit policies create ci-egress --allow api.github.com --allow uploads.github.com"
    ))
  )

const policyIdArgument = Args.text({ name: "POLICY_ID" }).pipe(
  Args.withSchema(EgressPolicyId),
  Args.withDescription("The policy (ep_… or hp_…).")
)

const get = Command.make("get", { ...clientOptions, policyId: policyIdArgument }, (options) =>
  withClient(options, ({ EgressPolicies }) => Effect.flatMap(EgressPolicies, (policies) => policies.retrieve(options.policyId))).pipe(
    Effect.flatMap((policy) => printResource(EgressPolicy, policy, options))
  )).pipe(Command.withDescription(help("Show an egress policy and its document.", "boxkit policies get ep_0123…")))

const rename = Command.make("rename", {
  ...clientOptions,
  policyId: policyIdArgument,
  name: Args.text({ name: "NAME" }).pipe(Args.withDescription("The new name."))
}, (options) =>
  withClient(
    options,
    ({ EgressPolicies }) => Effect.flatMap(EgressPolicies, (policies) => policies.rename(options.policyId, options.name))
  ).pipe(Effect.flatMap((policy) => printResource(EgressPolicy, policy, options)))).pipe(
    Command.withDescription(help("Rename an egress policy.", "boxkit policies rename ep_0123… ci-egress-v2"))
  )

/** The `policies` command and its subcommands. */
export const command = Command.make("policies").pipe(
  Command.withDescription(help(
    "Egress policies: create one, show one, rename one.",
    "boxkit policies create ci-egress --allow api.github.com"
  )),
  Command.withSubcommands([create, get, rename])
)
