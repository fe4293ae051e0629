/**
 * A saved plan's requests are what apply sends. `edgeplan plan --out`, then `edgeplan apply --plan`, both through a
 * recording loopback proxy in front of the real server: every write the server received (method, path, body as
 * bytes) is compared with the `request` of its change in the plan file, byte for byte, apart from the ids of objects
 * created in the same apply (a body's `refs` names, replaced by the ids the creates answered, the map kept sorted).
 * A proxy rather than a hook in the server: it sees the bytes on the wire, and the server stays as it is.
 */
import { readFileSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closeWorlds, EDGE, HR1, HR2, R1, R2, startWorld, wbYaml } from "./e2e.js";

afterAll(closeWorlds);

/** One exchange the proxy passed on. */
interface Exchange {
  method: string;
  path: string;
  body: string;
  status: number;
  answer: string;
}

/** A loopback HTTP proxy to `target` that records every exchange, request and answer bodies as text. */
async function recordingProxy(target: string): Promise<{ url: string; exchanges: Exchange[]; close(): Promise<void> }> {
  const upstream = new URL(target);
  const exchanges: Exchange[] = [];
  const server: Server = createServer((req, res) => {
    const sent: Buffer[] = [];
    req.on("data", (c: Buffer) => sent.push(c));
    req.on("end", () => {
      const body = Buffer.concat(sent);
      const out = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
        const answer: Buffer[] = [];
        up.on("data", (c: Buffer) => answer.push(c));
        up.on("end", () => {
          const text = Buffer.concat(answer);
          exchanges.push({ method: req.method ?? "", path: req.url ?? "", body: body.toString("utf8"), status: up.statusCode ?? 0, answer: text.toString("utf8") });
          res.writeHead(up.statusCode ?? 502, up.headers);
          res.end(text);
        });
      });
      out.on("error", () => res.destroy());
      out.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

interface PlannedChange {
  address: string;
  kind: string;
  action: string;
  name?: string;
  request: { method: string; path: string; body: Record<string, unknown> | null };
  refs?: Record<string, string>;
}

const routeYaml = (route: string, body: string): string => `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${route}\n${body}`;
const cbYaml = (volume: number): string =>
  `circuit_breaker:\n  tripped_duration: 120\n  rolling_window: 300\n  num_buckets: 5\n  volume_threshold: ${volume}\n  error_threshold_percentage: 0.2\n`;
const samlYaml = (group: string): string => `saml:\n  idp_metadata_file: okta.xml\n  allow_idp_initiated: false\n  authorized_groups: [${group}]\n`;
const rollout = "rollout:\n  max_step: 50\n  interval: 1h\n";

/** The name in the owner marker a create's body carries. */
function markerName(body: string): string {
  return (JSON.parse(JSON.parse(body).metadata as string) as { edgeplan: { name: string } }).edgeplan.name;
}

/** What apply must send for `change`: its planned body, with names of objects created in this apply replaced by their ids. */
function expectedBody(change: PlannedChange, createdIds: Map<string, string>): string {
  const body = change.request.body;
  if (body === null) return "";
  const refs = change.refs ?? {};
  if (Object.keys(refs).length === 0) return JSON.stringify(body);
  const backends: Record<string, number> = {};
  for (const [key, weight] of Object.entries(body.backends as Record<string, number>)) {
    const address = refs[key];
    const id = address === undefined ? key : createdIds.get(address);
    expect(id, `the id of ${address} is known`).toBeDefined();
    backends[id as string] = weight;
  }
  const sorted = Object.fromEntries(
    Object.keys(backends)
      .sort()
      .map((k) => [k, backends[k]]),
  );
  return JSON.stringify({ ...body, backends: sorted });
}

describe("a saved plan's requests are what apply sends", { timeout: 90_000 }, () => {
  it("creates that reference each other, updates, a prune, module PUTs and DELETEs and a rollout step, byte for byte", async () => {
    const w = await startWorld();
    const proxy = await recordingProxy(w.server.url);
    const env = { EDGEPLAN_API_URL: proxy.url };
    try {
      const idp = readFileSync(join(import.meta.dirname, "..", "..", "examples", "saml", "idp", "okta.xml"), "utf8");
      const before = {
        "old.yaml": wbYaml("old", { [HR1]: 1 }),
        "upd.yaml": wbYaml("upd", { [HR1]: 50, [HR2]: 50 }, { description: "before" }),
        "web.yaml": wbYaml("web", { [HR1]: 100, [HR2]: 0 }) + rollout,
        "routes.yaml": `${routeYaml(R1, samlYaml("engineering") + cbYaml(20))}---\n${routeYaml(R2, samlYaml("engineering") + cbYaml(20))}`,
        "okta.xml": idp,
      };
      w.manifests(before);
      const setup = await w.cli(["apply", "m", "--auto-approve"], env);
      expect(setup.code, setup.stderr).toBe(0);

      w.manifests({
        "parent.yaml": wbYaml("parent", { child: 60, upd: 40 }, { description: "parent" }),
        "child.yaml": wbYaml("child", { [HR2]: 100 }, { description: "child" }),
        "upd.yaml": wbYaml("upd", { [HR1]: 40, [HR2]: 60 }, { description: "after" }),
        "web.yaml": wbYaml("web", { [HR1]: 0, [HR2]: 100 }) + rollout,
        "routes.yaml": `${routeYaml(R1, `${samlYaml("admins")}circuit_breaker: absent\n`)}---\n${routeYaml(R2, `saml: absent\n${cbYaml(30)}`)}`,
        "okta.xml": idp,
      });
      const plan = await w.cli(["plan", "m", "--prune", "--out", "p.json"], env);
      expect(plan.code, plan.stderr).toBe(0);
      const changes = (JSON.parse(readFileSync(join(w.dir, "p.json"), "utf8")) as { changes: PlannedChange[] }).changes;
      expect(changes.map((c) => `${c.address} ${c.action} ${c.request.method}`).sort()).toEqual([
        `edge_route.${EDGE}/${R1}.circuit_breaker delete DELETE`,
        `edge_route.${EDGE}/${R1}.saml replace PUT`,
        `edge_route.${EDGE}/${R2}.circuit_breaker replace PUT`,
        `edge_route.${EDGE}/${R2}.saml delete DELETE`,
        // The inventory records the circuit breaker set on R2 and forgets the two modules deleted.
        "inventory.default#1 update PATCH",
        "weighted_backend.child create POST",
        "weighted_backend.old delete DELETE",
        "weighted_backend.parent create POST",
        "weighted_backend.upd update PATCH",
        "weighted_backend.web rollout PATCH",
      ]);

      const mark = proxy.exchanges.length;
      const applied = await w.cli(["apply", "--plan", "p.json", "--auto-approve", "--ack", "auth-removal"], env);
      expect(applied.code, applied.stderr).toBe(0);

      // The apply's own writes besides the plan's: its lease object, created first and deleted last, and the account's
      // claim lease around the changes (the plan writes an inventory).
      const writes = proxy.exchanges.slice(mark).filter((e) => e.method !== "GET");
      const leasePosts = writes.filter((e) => e.method === "POST" && (JSON.parse(e.body) as { metadata: string }).metadata.includes('"lease":{'));
      expect(leasePosts.map((e) => (JSON.parse(e.body) as { metadata: string }).metadata.includes('"stack":"edgeplan:claims"'))).toEqual([false, true]);
      const leaseIds = leasePosts.map((e) => (JSON.parse(e.answer) as { id?: string }).id);
      for (const id of leaseIds) expect(id).toMatch(/^bkdwd_/);
      const sent = writes.filter((e) => !leasePosts.includes(e) && !leaseIds.some((id) => e.path === `/backends/weighted/${id}`));
      expect(writes.length - sent.length).toBe(4);
      expect(
        sent.every((e) => e.status < 300),
        JSON.stringify(sent.filter((e) => e.status >= 300)),
      ).toBe(true);

      const createdIds = new Map<string, string>();
      for (const e of sent.filter((x) => x.method === "POST")) createdIds.set(`weighted_backend.${markerName(e.body)}`, (JSON.parse(e.answer) as { id: string }).id);
      // Each change is sent once, exactly as planned; nothing else is sent.
      const matched = changes.map((c) => {
        const mine = sent.filter((e) => e.method === c.request.method && e.path === c.request.path && (c.request.method !== "POST" || markerName(e.body) === c.name));
        expect(mine.length, `${c.address} is sent once`).toBe(1);
        return { address: c.address, method: mine[0]?.method, path: mine[0]?.path, body: mine[0]?.body };
      });
      expect(sent).toHaveLength(changes.length);
      expect(matched).toEqual(changes.map((c) => ({ address: c.address, method: c.request.method, path: c.request.path, body: expectedBody(c, createdIds) })));
      // The reference to the new child really was a name in the plan, replaced by the id its create answered.
      const upd = (await w.owned()).get("upd");
      const parent = changes.find((c) => c.address === "weighted_backend.parent");
      expect(parent?.refs).toEqual({ child: "weighted_backend.child" });
      expect(parent?.request.body?.backends).toEqual({ child: 60, [upd?.id as string]: 40 });
      expect(JSON.parse(matched.find((m) => m.address === "weighted_backend.parent")?.body ?? "{}").backends).toEqual({
        [createdIds.get("weighted_backend.child") as string]: 60,
        [upd?.id as string]: 40,
      });
    } finally {
      await proxy.close();
    }
  });
});

describe("a saved rollout step applied late", { timeout: 90_000 }, () => {
  it("is refused as a stale plan (exit 1), nothing sent, when its planned time is more than its grace (5 s for a 1 s interval) past", async () => {
    const w = await startWorld();
    w.manifests({ "web.yaml": wbYaml("web", { [HR1]: 100, [HR2]: 0 }) });
    expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
    w.manifests({ "web.yaml": `${wbYaml("web", { [HR1]: 0, [HR2]: 100 })}rollout:\n  max_step: 25\n  interval: 1s\n` });
    expect((await w.cli(["plan", "m", "--out", "late.json"])).code).toBe(0);
    const planned = (JSON.parse(readFileSync(join(w.dir, "late.json"), "utf8")) as { changes: Array<{ request: { body: { metadata: string } } }> }).changes[0];
    const at = (JSON.parse(planned?.request.body.metadata ?? "{}") as { edgeplan: { rollout: { at: string } } }).edgeplan.rollout.at;
    const wait = Date.parse(at) + 5100 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));

    const mark = w.log().length;
    const late = await w.cli(["apply", "--plan", "late.json", "--auto-approve"]);
    const until = new Date(Date.parse(at) + 5000).toISOString().slice(11, 19);
    expect(late.stderr).toMatch(
      new RegExp(
        "^edgeplan: the saved plan late\\.json is stale: it can no longer be applied as it was made:\n" +
          `  weighted_backend\\.web: rollout step 1 of 4 was to be applied before ${until} UTC, 5s after the plan was made \\(it is \\d\\d:\\d\\d:\\d\\d UTC\\): ` +
          "written now, the next step would come early\n" +
          "No change was sent\\. Plan again with: edgeplan plan --out late\\.json; or pass --refresh to plan again from the manifests and apply that\\.\n$",
      ),
    );
    expect(late.code, late.stderr).toBe(1);
    // Only the apply's lease was written (docs/reliability.md, section 6).
    expect(w.changeWrites(mark)).toEqual([]);
    expect((await w.owned()).get("web")?.backends).toEqual({ [HR1]: 100, [HR2]: 0 });
  });
});
