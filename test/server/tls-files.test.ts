/**
 * The TLS files read without blocking: a FIFO, a directory, a device and a file past the size cap are each refused
 * with the reason, at once, and a missing file says ENOENT.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readTlsFiles, TLS_FILE_MAX_BYTES } from "../../src/server/tls-files.js";

const dir = mkdtempSync(join(tmpdir(), "edgeplan-tls-files-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const key = join(dir, "tls.key");
writeFileSync(key, "-----BEGIN PRIVATE KEY-----\n");

describe("readTlsFiles", () => {
  it("reads two regular files", async () => {
    const cert = join(dir, "ok.crt");
    writeFileSync(cert, "-----BEGIN CERTIFICATE-----\n");
    expect(await readTlsFiles({ certFile: cert, keyFile: key })).toEqual({
      cert: Buffer.from("-----BEGIN CERTIFICATE-----\n"),
      key: Buffer.from("-----BEGIN PRIVATE KEY-----\n"),
    });
  });

  it("refuses what is not a regular file, or is too large, without waiting", async () => {
    const fifo = join(dir, "fifo.crt");
    execFileSync("mkfifo", [fifo]);
    const folder = join(dir, "folder.crt");
    mkdirSync(folder);
    const large = join(dir, "large.crt");
    writeFileSync(large, Buffer.alloc(TLS_FILE_MAX_BYTES + 1, 65));
    const cases: [string, string][] = [
      [fifo, `cannot read --tls-cert ${fifo}: it is a FIFO, not a regular file; give a readable PEM file`],
      [folder, `cannot read --tls-cert ${folder}: it is a directory, not a regular file; give a readable PEM file`],
      ["/dev/zero", "cannot read --tls-cert /dev/zero: it is a device, not a regular file; give a readable PEM file"],
      [large, `cannot read --tls-cert ${large}: it is larger than ${TLS_FILE_MAX_BYTES} bytes; give a readable PEM file`],
      [join(dir, "none.crt"), `cannot read --tls-cert ${join(dir, "none.crt")}: ENOENT; give a readable PEM file`],
    ];
    for (const [certFile, message] of cases) await expect(readTlsFiles({ certFile, keyFile: key }), certFile).rejects.toThrow(message);
    await expect(readTlsFiles({ certFile: join(dir, "ok.crt"), keyFile: fifo })).rejects.toThrow(`cannot read --tls-key ${fifo}: it is a FIFO`);
  });
});
