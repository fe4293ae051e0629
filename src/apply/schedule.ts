/**
 * The schedule of an apply: which of a plan's changes may start now, and what a failure means for the others. It
 * is the pure half of the engine (./engine.ts does the requests): a change is ready as soon as every change it
 * depends on is done, without waiting for a whole level of the graph; a failed change makes every change that
 * depends on it, directly or not, `skipped`; an interrupted run leaves the changes it never started `not_started`.
 * Among ready changes, non-deletes come first (those that unblock the longest chains first), deletes last, so
 * creates of referenced objects go out first and deletes go out after everything else was started.
 */
import { dependencyLevels } from "../core/graph.js";
import { InternalError } from "../model/errors.js";
import type { Change } from "../model/plan.js";
import { compareText } from "../model/canonical.js";

export type ChangeStatus = "pending" | "running" | "done" | "failed" | "skipped" | "not_started";

/** Where a change stands; `blockedBy` names the failed change that made it `skipped`. */
export interface ChangeState {
  address: string;
  status: ChangeStatus;
  /** For a skipped change: the failed change it (transitively) depends on. */
  blockedBy: string | null;
}

interface Node {
  change: Change;
  deps: string[];
  dependents: string[];
  /** Length of the longest chain of changes that wait for this one (0 when nothing waits for it). */
  height: number;
  /** How many changes wait for this one, directly or not. */
  reach: number;
  state: ChangeState;
}

/**
 * The schedule of a plan's changes. Mutable, but pure: it does no I/O and decides from its own state only.
 * Throws InternalError from the constructor when the dependencies form a cycle or name a change the plan lacks.
 */
export class ApplySchedule {
  private readonly nodes = new Map<string, Node>();
  /** Addresses in start priority. */
  private readonly order: string[];
  /** Position of each address in `order`. */
  private readonly rank = new Map<string, number>();
  /** Dependencies of each change not done yet. */
  private readonly waiting = new Map<string, number>();
  /**
   * Pending changes whose dependencies are all done, in start priority. Kept up to date as changes finish, because
   * the engine asks for it after every change: scanning the whole plan each time made a run of n changes cost n^2.
   */
  private readyList: string[] = [];

  constructor(changes: readonly Change[]) {
    // Validates the graph (unknown dependencies, cycles) and gives an order in which heights can be computed.
    const levels = dependencyLevels({ changes: [...changes] });
    for (const change of changes) {
      if (this.nodes.has(change.address)) throw new InternalError(`plan: two changes have the address ${change.address}`);
      this.nodes.set(change.address, {
        change,
        deps: [...new Set(change.depends_on)].sort(),
        dependents: [],
        height: 0,
        reach: 0,
        state: { address: change.address, status: "pending", blockedBy: null },
      });
    }
    for (const node of this.nodes.values()) for (const dep of node.deps) this.node(dep).dependents.push(node.change.address);
    for (const level of [...levels].reverse()) {
      for (const address of level) {
        const node = this.node(address);
        node.height = Math.max(0, ...node.dependents.map((d) => this.node(d).height + 1));
        node.reach = this.descendants(address).size;
      }
    }
    const isDelete = (n: Node): number => (n.change.action === "delete" ? 1 : 0);
    this.order = [...this.nodes.values()]
      .sort((a, b) => isDelete(a) - isDelete(b) || b.height - a.height || b.reach - a.reach || compareText(a.change.address, b.change.address))
      .map((n) => n.change.address);
    this.order.forEach((address, i) => {
      this.rank.set(address, i);
      const waiting = this.node(address).deps.length;
      this.waiting.set(address, waiting);
      if (waiting === 0) this.readyList.push(address);
    });
  }

  /** The change at an address. */
  change(address: string): Change {
    return this.node(address).change;
  }

  /** A copy of the state of every change, in start priority. */
  states(): ChangeState[] {
    return this.order.map((a) => ({ ...this.node(a).state }));
  }

  /** The state of one change (a copy). */
  state(address: string): ChangeState {
    return { ...this.node(address).state };
  }

  /** Pending changes whose dependencies are all done, in start priority. */
  ready(): string[] {
    return [...this.readyList];
  }

  /** Marks a ready change as running. Throws InternalError when it is not ready. */
  start(address: string): void {
    const node = this.node(address);
    if (node.state.status !== "pending" || !node.deps.every((d) => this.node(d).state.status === "done")) {
      throw new InternalError(`apply: ${address} was started while it was ${node.state.status} or waiting for a dependency`);
    }
    node.state.status = "running";
    // The engine starts ready changes in order, so this is nearly always the first one.
    const at = this.readyList.indexOf(address);
    if (at >= 0) this.readyList.splice(at, 1);
  }

  /** Marks a running change done. */
  succeed(address: string): void {
    this.finish(address, "done");
    for (const dependent of this.node(address).dependents) {
      const waiting = (this.waiting.get(dependent) ?? 0) - 1;
      this.waiting.set(dependent, waiting);
      if (waiting === 0 && this.node(dependent).state.status === "pending") this.insertReady(dependent);
    }
  }

  /** Puts a change that became ready in its place by start priority. */
  private insertReady(address: string): void {
    const rank = this.rank.get(address) as number;
    let lo = 0;
    let hi = this.readyList.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.rank.get(this.readyList[mid] as string) as number) < rank) lo = mid + 1;
      else hi = mid;
    }
    this.readyList.splice(lo, 0, address);
  }

  /**
   * Marks a running change failed, and every pending change that depends on it (directly or not) skipped.
   * Returns the addresses newly skipped, in start priority.
   */
  fail(address: string): string[] {
    this.finish(address, "failed");
    const skipped: string[] = [];
    const below = this.descendants(address);
    for (const a of this.order) {
      const node = this.node(a);
      if (below.has(a) && node.state.status === "pending") {
        node.state.status = "skipped";
        node.state.blockedBy = address;
        skipped.push(a);
      }
    }
    return skipped;
  }

  /** Marks every pending change not started (the run was interrupted). Returns them, in start priority. */
  cancel(): string[] {
    const cancelled: string[] = [];
    for (const a of this.order) {
      const node = this.node(a);
      if (node.state.status === "pending") {
        node.state.status = "not_started";
        cancelled.push(a);
      }
    }
    this.readyList = [];
    return cancelled;
  }

  /** How many changes are running. */
  running(): number {
    let n = 0;
    for (const node of this.nodes.values()) if (node.state.status === "running") n++;
    return n;
  }

  /** True when nothing is pending or running. */
  finished(): boolean {
    for (const node of this.nodes.values()) if (node.state.status === "pending" || node.state.status === "running") return false;
    return true;
  }

  /**
   * True when pending changes remain but none can ever become ready (every one waits, directly or not, on a change
   * that is not going to be done). Cannot happen with a valid graph, because a failure skips its dependents; should
   * it happen, the engine's loop ends when nothing is in flight and `cancel` reports what was left.
   */
  stuck(): boolean {
    return this.running() === 0 && this.ready().length === 0 && !this.finished();
  }

  private finish(address: string, status: "done" | "failed"): void {
    const node = this.node(address);
    if (node.state.status !== "running") throw new InternalError(`apply: ${address} finished while it was ${node.state.status}`);
    node.state.status = status;
  }

  private descendants(address: string): Set<string> {
    const seen = new Set<string>();
    const stack = [...this.node(address).dependents];
    while (stack.length > 0) {
      const a = stack.pop() as string;
      if (seen.has(a)) continue;
      seen.add(a);
      stack.push(...this.node(a).dependents);
    }
    return seen;
  }

  private node(address: string): Node {
    const node = this.nodes.get(address);
    if (!node) throw new InternalError(`apply: ${address} is not a change of the plan`);
    return node;
  }
}
