/**
 * Weighted backends (docs/api.md section 1): create, get, list, update, delete, with the referential rules. Every
 * write validates and writes inside one store transaction, so a rejected request changes nothing.
 */
import { ID_PREFIX, isBackendId, LIMITS, WEIGHTED_BACKEND_FIELDS, WEIGHTED_BACKEND_GENERATED_FIELDS } from "../model/wire.js";
import type { Handler } from "./context.js";
import { describeType, fieldError, HttpError, invalidField, notFound } from "./http-error.js";
import { buildPage, parsePageQuery, rejectQuery } from "./paging.js";
import { renderWeightedBackend } from "./render.js";
import type { StoreTx, WeightedBackendRecord } from "./store.js";
import { isPlainObject, readString, rejectUnknownFields, type JsonObject } from "./validate.js";

const CREATE_FIELDS: ReadonlySet<string> = new Set(WEIGHTED_BACKEND_FIELDS);
// A PATCH may repeat the id of its path.
const UPDATE_FIELDS: ReadonlySet<string> = new Set(["id", ...WEIGHTED_BACKEND_FIELDS]);
const CREATE_GENERATED: ReadonlySet<string> = new Set(WEIGHTED_BACKEND_GENERATED_FIELDS);
const UPDATE_GENERATED: ReadonlySet<string> = new Set(WEIGHTED_BACKEND_GENERATED_FIELDS.filter((f) => f !== "id"));
const WEIGHTED_PREFIX = `${ID_PREFIX.weightedBackend}_`;

/**
 * Checks the shape of a `backends` map: keys are backend ids (ERR_NGROK_6526), weights integers 0..10000
 * (ERR_NGROK_6512), at most 100 children (ERR_NGROK_6511). Existence and cycles need the store: see below.
 */
function readBackendsMap(value: unknown): Record<string, number> {
  if (!isPlainObject(value)) throw invalidField("backends", `expected an object of backend id to weight, got ${describeType(value)}`);
  const keys = Object.keys(value);
  if (keys.length > LIMITS.childrenPerWeightedBackend) {
    throw fieldError("ERR_NGROK_6511", "backends", `backends: ${keys.length} children is more than the limit of ${LIMITS.childrenPerWeightedBackend} per weighted backend`);
  }
  const out: Record<string, number> = {};
  for (const key of keys) {
    const field = `backends.${key}`;
    if (!isBackendId(key)) {
      throw fieldError(
        "ERR_NGROK_6526",
        field,
        `${field}: "${key}" is not a backend id; keys are ids of backends (bkdwd_, bkdhr_, bkdtg_, bkdfo_ or bkdsc_ followed by 27 base62 characters)`,
      );
    }
    const weight = value[key];
    if (typeof weight !== "number" || !Number.isInteger(weight)) {
      throw fieldError("ERR_NGROK_6512", field, `${field}: weight must be an integer from 0 to ${LIMITS.weightMax}, got ${describeType(weight)}`);
    }
    if (weight < 0 || weight > LIMITS.weightMax) {
      throw fieldError("ERR_NGROK_6512", field, `${field}: weight ${weight} is out of range 0 to ${LIMITS.weightMax}`);
    }
    out[key] = weight;
  }
  return out;
}

/** Every child must exist in the account (ERR_NGROK_6501); the weighted ones stay locked until the write commits. */
async function checkChildrenExist(tx: StoreTx, account: string, backends: Record<string, number>): Promise<void> {
  const children = Object.keys(backends);
  const existing = children.length === 0 ? new Set<string>() : await tx.existingBackends(account, children);
  for (const child of children) {
    if (!existing.has(child)) {
      throw fieldError(
        "ERR_NGROK_6501",
        `backends.${child}`,
        `backends.${child}: backend ${child} does not exist in this account; create it first or remove it from backends`,
      );
    }
  }
}

/** The weighted backends among `backends` that `current` does not reference yet: the references a write adds. */
function addedReferences(current: WeightedBackendRecord, backends: Record<string, number>): string[] {
  return Object.keys(backends).filter((child) => child.startsWith(WEIGHTED_PREFIX) && !(child in current.backends));
}

/**
 * Reads weighted backend `id` for update. When the update adds a reference to a weighted backend, the account's
 * graph lock is taken first, before the row lock, so that walks for cycles run one at a time and never wait on each
 * other's row locks. Whether it adds one is decided on an unlocked read; when the locked read disagrees (a
 * concurrent update removed a reference in between), the lock is taken without waiting, or the transaction runs
 * again (docs/reliability.md, section 9).
 */
async function readForUpdate(tx: StoreTx, account: string, id: string, backends: Record<string, number>): Promise<WeightedBackendRecord> {
  let graphLocked = false;
  if (Object.keys(backends).some((child) => child.startsWith(WEIGHTED_PREFIX))) {
    const seen = await tx.getWeightedBackend(account, id);
    if (seen && addedReferences(seen, backends).length > 0) {
      await tx.lockGraph(account);
      graphLocked = true;
    }
  }
  const current = await tx.getWeightedBackend(account, id, true);
  if (!current) throw notFound("weighted backend", id);
  if (!graphLocked && addedReferences(current, backends).length > 0) await tx.lockGraph(account, false);
  return current;
}

/**
 * The references `added` (children of weighted backend `id`, under the graph lock) must not make a cycle
 * (ERR_NGROK_6524): none may be `id` itself, nor reach `id` through the children the store holds. Only added
 * references are walked: the graph held no cycle before, and references kept or removed cannot make one.
 * Depth-first over weighted children only; each node is visited once.
 */
async function checkNoCycle(tx: StoreTx, account: string, id: string, added: string[]): Promise<void> {
  for (const child of added) {
    if (child === id) {
      throw fieldError("ERR_NGROK_6524", `backends.${child}`, `backends.${child}: a weighted backend cannot reference itself`);
    }
    const visited = new Set<string>([child]);
    const stack: { node: string; path: string[] }[] = [{ node: child, path: [id, child] }];
    while (stack.length > 0) {
      const { node, path } = stack.pop() as { node: string; path: string[] };
      for (const next of await tx.weightedChildrenOf(account, node)) {
        if (next === id) {
          throw fieldError(
            "ERR_NGROK_6524",
            `backends.${child}`,
            `backends.${child}: this reference makes a cycle (${[...path, id].join(" -> ")}); weighted backends must not reference each other in a loop`,
          );
        }
        if (!visited.has(next)) {
          visited.add(next);
          stack.push({ node: next, path: [...path, next] });
        }
      }
    }
  }
}

function requireBody(body: JsonObject | undefined): JsonObject {
  if (!body) throw new HttpError(400, "ERR_NGROK_213", "the request needs a JSON object body");
  return body;
}

export const listWeightedBackends: Handler = async (server, tx, req) => {
  const page = parsePageQuery(req.query);
  const listUrl = `${server.baseUrl}/backends/weighted`;
  const result = await buildPage(listUrl, page, (q) => tx.listWeightedBackends(req.account, q));
  return {
    status: 200,
    body: {
      backends: result.items.map((r) => renderWeightedBackend(server.baseUrl, r)),
      uri: result.uri,
      next_page_uri: result.next_page_uri,
    },
  };
};

export const createWeightedBackend: Handler = async (server, tx, req) => {
  rejectQuery(req.query);
  const body = requireBody(req.body);
  rejectUnknownFields(body, CREATE_FIELDS, "", CREATE_GENERATED);
  const description = readString(body, "description", "description", LIMITS.descriptionBytes) ?? "";
  const metadata = readString(body, "metadata", "metadata", LIMITS.metadataBytes) ?? "";
  if (body.backends === undefined) {
    throw invalidField("backends", "is required (an object of backend id to weight; {} for none)");
  }
  const backends = readBackendsMap(body.backends);
  await tx.lockAccount(req.account);
  if ((await tx.countWeightedBackends(req.account)) >= LIMITS.weightedBackendsPerAccount) {
    throw new HttpError(
      400,
      "ERR_NGROK_6511",
      `this account already has ${LIMITS.weightedBackendsPerAccount} weighted backends, the limit; delete some before creating more`,
    );
  }
  await checkChildrenExist(tx, req.account, backends);
  const { id, created_at } = await tx.newId(ID_PREFIX.weightedBackend);
  const record: WeightedBackendRecord = { id, created_at, description, metadata, backends };
  await tx.insertWeightedBackend(req.account, record);
  return { status: 201, body: renderWeightedBackend(server.baseUrl, record) };
};

export const getWeightedBackend: Handler = async (server, tx, req) => {
  rejectQuery(req.query);
  const id = req.params[0] as string;
  const record = await tx.getWeightedBackend(req.account, id);
  if (!record) throw notFound("weighted backend", id);
  return { status: 200, body: renderWeightedBackend(server.baseUrl, record) };
};

export const updateWeightedBackend: Handler = async (server, tx, req) => {
  rejectQuery(req.query);
  const id = req.params[0] as string;
  const body = requireBody(req.body);
  rejectUnknownFields(body, UPDATE_FIELDS, "", UPDATE_GENERATED);
  const bodyId = readString(body, "id", "id");
  if (bodyId !== undefined && bodyId !== id) {
    throw invalidField("id", `"${bodyId.slice(0, 64)}" does not match the id in the path (${id}); leave it out or send the same id`);
  }
  const description = readString(body, "description", "description", LIMITS.descriptionBytes);
  const metadata = readString(body, "metadata", "metadata", LIMITS.metadataBytes);
  // An absent `backends` means an empty map (docs/api.md section 1, rule 2), as the retired API did.
  const backends = body.backends === undefined ? {} : readBackendsMap(body.backends);
  const current = await readForUpdate(tx, req.account, id, backends);
  await checkChildrenExist(tx, req.account, backends);
  await checkNoCycle(tx, req.account, id, addedReferences(current, backends));
  const next: WeightedBackendRecord = {
    id,
    created_at: current.created_at,
    description: description ?? current.description,
    metadata: metadata ?? current.metadata,
    backends,
  };
  await tx.updateWeightedBackend(req.account, next);
  return { status: 200, body: renderWeightedBackend(server.baseUrl, next) };
};

export const deleteWeightedBackend: Handler = async (_server, tx, req) => {
  rejectQuery(req.query);
  const id = req.params[0] as string;
  if (!(await tx.getWeightedBackend(req.account, id, true))) throw notFound("weighted backend", id);
  const parents = await tx.parentsOf(req.account, id, 5);
  if (parents.length > 0) {
    throw new HttpError(
      400,
      "ERR_NGROK_6502",
      `weighted backend ${id} is still referenced by ${parents.join(", ")}${parents.length === 5 ? " and maybe others" : ""}; remove it from their backends first`,
      { referenced_by: parents.join(",") },
    );
  }
  await tx.deleteWeightedBackend(req.account, id);
  return { status: 204 };
};
