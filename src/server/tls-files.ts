/**
 * The TLS certificate and key files of `--tls-cert` and `--tls-key`, read without blocking the event loop (at start
 * and on SIGHUP, while requests are served). A path may be anything an operator or a mistake put there: a FIFO
 * blocks a reader until someone writes to it, a device never ends. So each file is opened without blocking, must be
 * a regular file, and is read up to a size no PEM chain reaches.
 */
import { constants } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { EdgeplanError } from "../model/errors.js";

/** The files of `--tls-cert` and `--tls-key`. */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

/** Larger than any certificate chain or key in PEM (a chain of ten 4096-bit certificates is about 20 KB). */
export const TLS_FILE_MAX_BYTES = 1024 * 1024;

/** What a file is when it is not a regular file, for the message. */
function kindOf(stats: { isFIFO(): boolean; isDirectory(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean; isSocket(): boolean }): string {
  if (stats.isFIFO()) return "a FIFO";
  if (stats.isDirectory()) return "a directory";
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return "a device";
  return stats.isSocket() ? "a socket" : "not a regular file";
}

/** The bytes of one regular file, at most `TLS_FILE_MAX_BYTES`. @throws EdgeplanError naming the flag and file. */
async function readOne(flag: string, file: string): Promise<Buffer> {
  const refuse = (why: string, cause?: unknown): EdgeplanError => new EdgeplanError(`cannot read ${flag} ${file}: ${why}; give a readable PEM file`, { cause });
  let handle: FileHandle;
  try {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, holding a thread of the pool.
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw refuse((err as NodeJS.ErrnoException).code ?? (err as Error).message, err);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw refuse(`it is ${kindOf(stats)}, not a regular file`);
    const buffer = Buffer.alloc(TLS_FILE_MAX_BYTES + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > TLS_FILE_MAX_BYTES) throw refuse(`it is larger than ${TLS_FILE_MAX_BYTES} bytes`);
    }
    return buffer.subarray(0, length);
  } catch (err) {
    if (err instanceof EdgeplanError) throw err;
    throw refuse((err as NodeJS.ErrnoException).code ?? (err as Error).message, err);
  } finally {
    await handle.close();
  }
}

/** The certificate and key of `tls`, read; an EdgeplanError names the file that cannot be read, and why. */
export async function readTlsFiles(tls: TlsFiles): Promise<{ cert: Buffer; key: Buffer }> {
  const cert = await readOne("--tls-cert", tls.certFile);
  return { cert, key: await readOne("--tls-key", tls.keyFile) };
}

/** A TLS error of node (bad PEM, key and certificate that do not match) as an EdgeplanError naming both files. */
export function tlsError(tls: TlsFiles, err: unknown): EdgeplanError {
  // OpenSSL's messages start with a code and a library name (error:05800074:x509 certificate routines::...).
  const reason = (err as Error).message.replace(/^error:[0-9A-F]+:[^:]*::/, "");
  const why =
    reason === "key values mismatch" ? "the key is not the certificate's" : reason === "unsupported" || reason === "no start line" ? `a file is not PEM (${reason})` : reason;
  return new EdgeplanError(`cannot use --tls-cert ${tls.certFile} with --tls-key ${tls.keyFile}: ${why}; give a PEM certificate and its private key`, { cause: err });
}
