/**
 * The client toolkit as the client commands use it, in one module that their handlers load when they run
 * (ClientOptions.withClient), so that `boxkit serve` and `boxkit --help` start without it.
 *
 * @since 0.1.0
 */
export { Apps } from "../../Client/Apps.js"
export { Boxes } from "../../Client/Boxes.js"
export { layer } from "../../Client/Boxkit.js"
export { Clipboard } from "../../Client/Clipboard.js"
export { EgressPolicies } from "../../Client/EgressPolicies.js"
export { Exec } from "../../Client/Exec.js"
export { Listeners } from "../../Client/Listeners.js"
export { Responses, responseOf } from "../../Client/Responses.js"
export { Secrets } from "../../Client/Secrets.js"
