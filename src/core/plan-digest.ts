/**
 * The digest of what a plan would change: the record that a pull request's reviewed plan and the plan made when it
 * merges are the same. Both sides compute it here, from the changes only (never a timestamp, the estimate or the
 * order a renderer shows), so that the same changes give the same digest on any runner. Pure.
 */
import { canonicalJson, compareText, digestOf } from "../model/canonical.js";
import type { Change, Plan } from "../model/plan.js";
import { changeWriteOf } from "./change-write.js";

/** Hex characters of a change's digest in the record: 64 bits tell two versions of one change apart. */
const CHANGE_DIGEST_CHARS = 16;

/** What was reviewed: the digest of the whole plan, and one short digest per change address. */
export interface PlanRecord {
  digest: string;
  changes: Record<string, string>;
}

/** How the plan at merge differs from the reviewed one, by address. */
export interface PlanDifference {
  /** Changes the reviewed plan did not show. */
  added: string[];
  /** Changes the reviewed plan showed that are gone. */
  removed: string[];
  /** Changes on both sides that would now do something else (live changed, or the manifest did). */
  changed: string[];
}

/**
 * What of a change is reviewed: what it does (action, before, after, the request's method and path) and nothing
 * about when. A rollout step is recorded by what it commits to (`changeWriteOf`): where it starts, the end state, and
 * everything that decides each write on the way (pace, interval, the check and the analysis with their URLs, headers
 * and bodies), not by its step: steps advance on their own schedule between review and merge, and each is the
 * reviewed rollout. Header values and URLs may hold `${EDGEPLAN_VAR_*}` values: they only ever enter a sha256, and the
 * record holds nothing but digests.
 */
function reviewedPart(change: Change): unknown {
  if (change.kind === "inventory") {
    // An inventory write is the bookkeeping of the module changes beside it: what it records and forgets is reviewed,
    // not which object holds the entries, nor the entries another merge recorded meanwhile.
    const before = change.before ?? {};
    const after = change.after ?? {};
    const records = Object.keys(after).filter((a) => canonicalJson(after[a]) !== canonicalJson(before[a]));
    const forgets = Object.keys(before).filter((a) => !(a in after));
    return { address: change.address, records: Object.fromEntries(records.sort(compareText).map((a) => [a, after[a]])), forgets: forgets.sort(compareText) };
  }
  const common = { address: change.address, action: change.action, method: change.request.method, path: change.request.path };
  const write = changeWriteOf(change);
  if (change.kind === "weighted_backend" && change.rollout && write.rollout) {
    const { pace, gates } = write.rollout;
    return { ...common, target: change.rollout.target, from: change.rollout.from, end: write.end, pace, gates };
  }
  return { ...common, before: change.before, after: change.after };
}

/**
 * The record of a plan: the same changes (in any order) give the same record; a change that would send another
 * request, or start from other live values, gives another. The stack is part of the whole digest.
 */
export function buildPlanRecord(plan: Plan): PlanRecord {
  const changes: Record<string, string> = {};
  for (const change of [...plan.changes].sort((a, b) => compareText(a.address, b.address))) {
    changes[change.address] = digestOf(reviewedPart(change)).slice(0, CHANGE_DIGEST_CHARS);
  }
  return { digest: digestOf({ stack: plan.stack, changes }), changes };
}

/** What differs between the reviewed record and the record of the plan at merge, each list sorted. */
export function diffPlanRecords(reviewed: PlanRecord, now: PlanRecord): PlanDifference {
  const added = Object.keys(now.changes).filter((a) => !(a in reviewed.changes));
  const removed = Object.keys(reviewed.changes).filter((a) => !(a in now.changes));
  const changed = Object.keys(now.changes).filter((a) => a in reviewed.changes && reviewed.changes[a] !== now.changes[a]);
  return { added: added.sort(compareText), removed: removed.sort(compareText), changed: changed.sort(compareText) };
}
