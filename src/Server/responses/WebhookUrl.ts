/**
 * The webhook URL rules: which `metadata.completion_webhook` values are webhook URLs (absolute http or https), and how
 * such a URL is shown in answers and logs (its userinfo redacted, since it may carry a password).
 *
 * Source: spec "Events / Completion webhook" rule 1; docs/ASSUMPTIONS.md "Webhooks".
 *
 * @since 0.1.0
 */
import { Option } from "effect"

/**
 * `url` with the user name and password of its userinfo replaced by `REDACTED` (`https://REDACTED:REDACTED@host/`),
 * for every answer and log that shows a webhook URL; other texts are returned as they are. A text without `@` has no
 * userinfo (a URL's userinfo ends with it) and is returned without being parsed.
 */
export const redactUserinfo = (url: string): string => {
  if (!url.includes("@")) return url
  try {
    const parsed = new URL(url)
    if (parsed.username === "" && parsed.password === "") return url
    if (parsed.username !== "") parsed.username = "REDACTED"
    if (parsed.password !== "") parsed.password = "REDACTED"
    return parsed.toString()
  } catch {
    return url
  }
}

/** True when `text` is an absolute http or https URL (spec rule 1: otherwise no webhook is sent). */
export const isWebhookUrl = (text: string | undefined | null): text is string =>
  Option.fromNullable(text).pipe(
    Option.flatMap((value) => {
      try {
        const url = new URL(value)
        return url.protocol === "http:" || url.protocol === "https:" ? Option.some(url) : Option.none()
      } catch {
        return Option.none()
      }
    }),
    Option.isSome
  )
