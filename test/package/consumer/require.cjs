// CommonJS: require() of the package and of a subpath, then a call against the embedded service.
const { Effect } = require("effect")
const { Secrets, NotFoundError } = require("boxkit")
const BoxkitTesting = require("boxkit/testing")

const program = Effect.gen(function*() {
  const secrets = yield* Secrets
  const secret = yield* secrets.retrieve("GITHUB_TOKEN")
  const missing = yield* Effect.flip(secrets.retrieve("NO_SUCH_SECRET"))
  return `cjs: secret ${secret.name}, missing is NotFoundError: ${missing instanceof NotFoundError}`
})

program.pipe(Effect.provide(BoxkitTesting.layer()), Effect.runPromise).then(console.log, (error) => {
  console.error(error)
  process.exit(1)
})
