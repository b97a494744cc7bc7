/**
 * A work queue shared fairly by organizations: each organization's tasks wait in a lane of their own (first in, first
 * out), the workers take from the lanes in turn (round-robin), and one lane never has more than `perLane` tasks
 * running at once. So one organization's backlog (thousands of webhook attempts to a receiver that never answers)
 * neither goes before another organization's task nor holds every worker: while the full lanes hold fewer than all
 * workers (full lanes x `perLane` < workers) another lane's task finds a free worker at once, and otherwise it is
 * among the next ones taken.
 *
 * Used by WebhookDelivery.ts for delivery attempts. Synchronous bookkeeping (one `Map` entry per organization with
 * waiting or running tasks, arrays with a moving head), no fiber per waiting task.
 *
 * Source: docs/ASSUMPTIONS.md "Webhooks" (fairness across organizations).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"

/** One organization's tasks: those waiting (from `head` on), how many run, and whether it is in the ready ring. */
interface Lane<A> {
  readonly key: string
  readonly waiting: Array<A>
  head: number
  running: number
  ready: boolean
}

/**
 * A task handed to a worker: its lane (the organization id, given back to {@link FairQueue.done}) and the task.
 *
 * @since 0.1.0
 * @category models
 */
export interface Taken<A> {
  readonly lane: string
  readonly task: A
}

/**
 * Lanes of tasks keyed by organization id, served round-robin, at most `perLane` running per lane.
 *
 * @since 0.1.0
 * @category models
 */
export class FairQueue<A> {
  private readonly lanes = new Map<string, Lane<A>>()
  /** Lanes with a task waiting and fewer than `perLane` running, in the order they take turns. */
  private readonly ready: Array<Lane<A>> = []
  private readyHead = 0
  /** Workers waiting for a task, in the order they asked. */
  private readonly idle: Array<(taken: Taken<A>) => void> = []

  /** `perLane`: tasks of one lane running at once at most (at least 1). */
  constructor(readonly perLane: number) {
    this.perLane = Math.max(1, Math.floor(perLane))
  }

  /** Tasks waiting over all lanes (not those running). */
  get size(): number {
    let count = 0
    for (const lane of this.lanes.values()) count += lane.waiting.length - lane.head
    return count
  }

  /** Puts `task` at the end of lane `key`'s tasks; an idle worker takes it at once when the lane may run one. */
  offer(key: string, task: A): void {
    let lane = this.lanes.get(key)
    if (lane === undefined) {
      lane = { key, waiting: [], head: 0, running: 0, ready: false }
      this.lanes.set(key, lane)
    }
    lane.waiting.push(task)
    this.markReady(lane)
    this.wake()
  }

  /**
   * The next task, from the lane whose turn it is: at once when one may run, otherwise when one is offered or a
   * running task of a full lane is done. The worker calls {@link done} with its lane when the task has run.
   */
  readonly take: Effect.Effect<Taken<A>> = Effect.suspend(() => {
    const next = this.poll()
    if (next !== undefined) return Effect.succeed(next)
    return Effect.async<Taken<A>>((resume) => {
      const wake = (taken: Taken<A>) => resume(Effect.succeed(taken))
      this.idle.push(wake)
      return Effect.sync(() => {
        const index = this.idle.indexOf(wake)
        if (index >= 0) this.idle.splice(index, 1)
      })
    })
  })

  /** A task of lane `key` has run: the lane may run another; a lane with nothing left is forgotten. */
  done(key: string): void {
    const lane = this.lanes.get(key)
    if (lane === undefined) return
    lane.running--
    if (lane.running <= 0 && lane.head >= lane.waiting.length) {
      this.lanes.delete(key)
      return
    }
    this.markReady(lane)
    this.wake()
  }

  /** Puts `lane` at the end of the ready ring when it has a task waiting and room to run it. */
  private markReady(lane: Lane<A>): void {
    if (!lane.ready && lane.head < lane.waiting.length && lane.running < this.perLane) {
      lane.ready = true
      this.ready.push(lane)
    }
  }

  /** The first task of the lane whose turn it is (that lane then goes to the end of the ring), if any. */
  private poll(): Taken<A> | undefined {
    if (this.readyHead >= this.ready.length) return undefined
    const lane = this.ready[this.readyHead++]
    if (this.readyHead >= this.ready.length) {
      this.ready.length = 0
      this.readyHead = 0
    } else if (this.readyHead >= 1024 && this.readyHead * 2 >= this.ready.length) {
      this.ready.splice(0, this.readyHead)
      this.readyHead = 0
    }
    lane.ready = false
    const task = lane.waiting[lane.head]
    lane.waiting[lane.head++] = undefined as A
    if (lane.head >= lane.waiting.length) {
      lane.waiting.length = 0
      lane.head = 0
    } else if (lane.head >= 1024 && lane.head * 2 >= lane.waiting.length) {
      lane.waiting.splice(0, lane.head)
      lane.head = 0
    }
    lane.running++
    this.markReady(lane)
    return { lane: lane.key, task }
  }

  /** Hands tasks to idle workers while both are there. */
  private wake(): void {
    while (this.idle.length > 0) {
      const next = this.poll()
      if (next === undefined) return
      this.idle.shift()!(next)
    }
  }
}
