/**
 * The model responses group of the contract (`ResponsesGroup`) and the completion window's body rules.
 *
 * Source: spec "POST {api_url}/responses", "Completion windows"; the read operation: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import * as Ids from "../../Domain/Ids.js"
import * as ModelResponse from "../../Domain/ModelResponse.js"
import { Errors } from "../Errors.js"
import { ResponseHeaders } from "../Headers.js"
import { Authorization, Idempotent, idempotencyKeyBytes, MemberByteCaps, operation } from "../Operation.js"

/**
 * `metadata.completion_window` is a completion window, and not `asap` on a background request (spec: completion
 * windows; docs/ASSUMPTIONS.md).
 */
const completionWindowRules = [
  { properties: { metadata: { properties: { completion_window: { enum: ModelResponse.CompletionWindow.literals } } } } },
  {
    not: {
      required: ["background", "metadata"],
      properties: {
        background: { const: true },
        metadata: {
          type: "object",
          required: ["completion_window"],
          properties: { completion_window: { const: "asap" } }
        }
      }
    }
  }
]


/**
 * Model responses: POST /responses (spec) and GET /responses/{response_id} (named without a shape; it returns the
 * same object as a completion webhook). POST answers 200 with the finished object (foreground), 202 with the accepted
 * object (background), or, when `stream` is true on a foreground request, 200 `text/event-stream` of Responses events
 * (written by the handler; the contract cannot express a stream). Headers: `Idempotency-Key` and the completion-window
 * header `x-completion-window` (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 * @category Contract
 */
export class ResponsesGroup extends HttpApiGroup.make("responses")
  .annotate(OpenApi.Description, "Model responses: foreground, background (with completion webhooks) or streamed; addressed from `{api_url}`.")
  .add(
    operation(
      HttpApiEndpoint.post("create", "/responses")
        .setPayload(ModelResponse.CreateResponseRequest)
        .setHeaders(ResponseHeaders)
        .addSuccess(ModelResponse.ModelResponse)
        .addSuccess(ModelResponse.ModelResponse, { status: 202 })
        .addError(Errors.Conflict)
        .addError(Errors.IdempotentRequestInFlight)
        .addError(Errors.QuotaExceeded)
        .annotate(Idempotent, true)
        .annotate(MemberByteCaps, ModelResponse.createRequestCaps),
      {
        summary: "Create a model response",
        description:
          "Creates a model response. 200: the finished Model response object (foreground); 202: the accepted " +
          "object (background: true), completed later; with stream: true on a foreground request, 200 is a " +
          "text/event-stream of Responses events (response.created ... response.completed / response.incomplete " +
          "/ response.failed), each with sequence_number. Honours `Idempotency-Key`.",
        maxBodyBytes: 32 * 1024 * 1024,
        eventStream:
          "Responses events (`text/event-stream`, with `stream: true` on a foreground request): `event:` and " +
          "`data:` lines, each data a JSON event with `type` and `sequence_number`, from `response.created` to " +
          "`response.completed`, `response.incomplete` or `response.failed`.",
        bodyRules: completionWindowRules,
        alsoRefused: [
          {
            param: ModelResponse.completionWindowHeader,
            rule: "`background: true` with the header's window `asap` and no `metadata.completion_window`"
          },
          {
            param: "input[*]",
            rule: "an `input` item that is not a message of content parts the model takes (item references, other " +
              "item types or roles, empty content, audio, files by id or URL, images for a text-only model)"
          },
          idempotencyKeyBytes
        ]
      }
    )
  )
  .add(
    operation(
      HttpApiEndpoint.get("retrieve")`/responses/${HttpApiSchema.param("response_id", Ids.ResponseId)}`
        .addSuccess(ModelResponse.ModelResponse),
      {
        summary: "Read a model response",
        description:
          "Returns a model response (the same object a completion webhook carries) while its result is " +
          "retained."
      }
    )
  )
  .middleware(Authorization) {}
