/**
 * `edgeplan serve --tls-cert --tls-key` (the built CLI): HTTPS with a self-signed certificate made here with
 * openssl, keep-alive as over HTTP, SIGHUP reading the files again (a bad file keeps the old pair; a FIFO in place
 * of the certificate is refused without blocking the server), and a key that does not match its certificate refused
 * at start.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:tls";
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { runCli, spawnServer, type SpawnedServer } from "../helpers/server.js";

const dir = mkdtempSync(join(tmpdir(), "edgeplan-tls-"));
const running: SpawnedServer[] = [];
afterAll(async () => {
  await Promise.all(running.map((s) => s.kill9()));
  rmSync(dir, { recursive: true, force: true });
});

/** A self-signed certificate for 127.0.0.1 and its key, as PEM files named `<name>.crt` and `<name>.key`. */
function selfSigned(name: string): { cert: string; key: string; fingerprint: string } {
  const [cert, key] = [join(dir, `${name}.crt`), join(dir, `${name}.key`)];
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "1",
      "-subj",
      `/CN=${name}`,
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      key,
      "-out",
      cert,
    ],
    { stdio: "ignore" },
  );
  return { cert, key, fingerprint: new X509Certificate(readFileSync(cert)).fingerprint256 };
}

/** The fingerprint of the certificate a new TLS connection to `url` is shown. */
function presented(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.on("error", reject);
  });
}

/** GET `path` over HTTPS trusting only `ca`, on `agent`; the status and whether the socket was reused. */
function get(url: string, path: string, ca: string, agent: Agent, key: string): Promise<{ status: number; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { ca: readFileSync(ca), agent, headers: { authorization: `Bearer ${key}`, "ngrok-version": "2" } }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100 && !(await check()); i++) await new Promise((resolve) => setTimeout(resolve, 50));
}

describe("TLS", () => {
  it("serves HTTPS with keep-alive, and SIGHUP reloads the certificate and key (a bad file keeps the old ones)", async () => {
    const first = selfSigned("first");
    const second = selfSigned("second");
    const [certFile, keyFile] = [join(dir, "live.crt"), join(dir, "live.key")];
    copyFileSync(first.cert, certFile);
    copyFileSync(first.key, keyFile);
    const s = await spawnServer(["--tls-cert", certFile, "--tls-key", keyFile]);
    running.push(s);
    expect(s.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect(await get(s.url, "/backends/weighted", first.cert, agent, s.apiKey)).toEqual({ status: 200, reused: false });
    expect(await get(s.url, "/backends/weighted", first.cert, agent, s.apiKey)).toEqual({ status: 200, reused: true });
    expect(await presented(s.url)).toBe(first.fingerprint);

    copyFileSync(second.cert, certFile);
    copyFileSync(second.key, keyFile);
    s.proc.kill("SIGHUP");
    await until(async () => (await presented(s.url)) === second.fingerprint);
    expect(await presented(s.url)).toBe(second.fingerprint);
    expect(await get(s.url, "/healthz", second.cert, new Agent(), s.apiKey)).toEqual({ status: 200, reused: false });
    expect(s.stderr()).toContain('"level":"info","msg":"SIGHUP: the TLS certificate and key were read again; new connections get them"');

    writeFileSync(keyFile, "not a key\n");
    s.proc.kill("SIGHUP");
    await until(async () => s.stderr().includes('"level":"error","msg":"SIGHUP: cannot use --tls-cert'));
    expect(s.stderr()).toContain(
      `"level":"error","msg":"SIGHUP: cannot use --tls-cert ${certFile} with --tls-key ${keyFile}: a file is not PEM (unsupported); give a PEM certificate and its private key; the previous certificate and key stay in use"`,
    );
    expect(await presented(s.url)).toBe(second.fingerprint);
    agent.destroy();
    expect(await s.stop()).toBe(0);
  });

  it("SIGHUP with a FIFO in place of the certificate: refused without a wait, the old pair kept, /healthz answering", async () => {
    const pair = selfSigned("fifo");
    const [certFile, keyFile] = [join(dir, "fifo-live.crt"), join(dir, "fifo-live.key")];
    copyFileSync(pair.cert, certFile);
    copyFileSync(pair.key, keyFile);
    const s = await spawnServer(["--tls-cert", certFile, "--tls-key", keyFile]);
    running.push(s);
    rmSync(certFile);
    execFileSync("mkfifo", [certFile]); // reading it would wait for a writer that never comes
    s.proc.kill("SIGHUP");
    const refused = `"level":"error","msg":"SIGHUP: cannot read --tls-cert ${certFile}: it is a FIFO, not a regular file; give a readable PEM file; the previous certificate and key stay in use"`;
    await until(async () => s.stderr().includes(refused));
    expect(s.stderr()).toContain(refused);
    expect(await get(s.url, "/healthz", pair.cert, new Agent(), s.apiKey)).toEqual({ status: 200, reused: false });
    expect(await presented(s.url)).toBe(pair.fingerprint);
    expect(await s.stop()).toBe(0);
  });

  it("refuses at start a key that is not the certificate's", async () => {
    const a = selfSigned("a");
    const b = selfSigned("b");
    const r = await runCli(["serve", "--port", "0", "--api-key", "k", "--tls-cert", a.cert, "--tls-key", b.key]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `edgeplan: cannot use --tls-cert ${a.cert} with --tls-key ${b.key}: the key is not the certificate's; give a PEM certificate and its private key\n`,
    );
  });
});
