/**
 * FairQueue.ts, the lanes webhook attempts wait in: first in, first out within an organization; organizations take
 * turns; at most `perLane` tasks of one organization run at once; an idle worker takes a task as soon as one may run.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { FairQueue, type Taken } from "../../src/Server/responses/FairQueue.js"

/** Takes `count` tasks one after another, each done at once: the order the workers would run them in with one worker. */
const drainInOrder = (queue: FairQueue<string>, count: number) =>
  Effect.gen(function*() {
    const order: Array<string> = []
    for (let index = 0; index < count; index++) {
      const { lane, task } = yield* queue.take
      order.push(task)
      queue.done(lane)
    }
    return order
  })

describe("FairQueue", () => {
  it.effect("organizations take turns; each one's tasks keep their order", () =>
    Effect.gen(function*() {
      const queue = new FairQueue<string>(1)
      for (let index = 1; index <= 5; index++) queue.offer("org_x", `x${index}`)
      queue.offer("org_y", "y1")
      queue.offer("org_y", "y2")
      queue.offer("org_z", "z1")
      expect(queue.size).toBe(8)
      const order = yield* drainInOrder(queue, 8)
      expect(order).toEqual(["x1", "y1", "z1", "x2", "y2", "x3", "x4", "x5"])
      expect(queue.size).toBe(0)
    }))

  it.effect("a lane runs at most `perLane` tasks at once; another lane's task is taken while it is full", () =>
    Effect.gen(function*() {
      const queue = new FairQueue<string>(2)
      for (let index = 1; index <= 10; index++) queue.offer("org_x", `x${index}`)
      const first = yield* queue.take
      const second = yield* queue.take
      expect([first.task, second.task]).toEqual(["x1", "x2"])
      // org_x is full: a third worker waits, and takes org_y's task the moment it is offered.
      const third = yield* Effect.fork(queue.take)
      yield* Effect.yieldNow()
      expect(third.unsafePoll()).toBeNull()
      queue.offer("org_y", "y1")
      const taken: Taken<string> = yield* Fiber.join(third)
      expect(taken.task).toBe("y1")
      // Once one of org_x's tasks is done, its next one may run.
      const fourth = yield* Effect.fork(queue.take)
      yield* Effect.yieldNow()
      expect(fourth.unsafePoll()).toBeNull()
      queue.done(first.lane)
      expect((yield* Fiber.join(fourth)).task).toBe("x3")
    }))

  it.effect("an interrupted idle worker is no longer handed tasks", () =>
    Effect.gen(function*() {
      const queue = new FairQueue<string>(1)
      const idle = yield* Effect.fork(queue.take)
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(idle)
      queue.offer("org_x", "x1")
      expect(queue.size).toBe(1)
      expect((yield* queue.take).task).toBe("x1")
    }))
})
