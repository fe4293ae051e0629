/**
 * Binding an HTTP server to its address and closing it again, for the API server and the agent's listener alike: a
 * bind error becomes a message that says what to do, and a close cuts the connections still busy after a bound.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { EdgeplanError } from "../model/errors.js";

/** The host as a URL writes it: an IPv6 address in brackets. */
export function urlHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

/** Listens; resolves with the bound port, or throws an EdgeplanError saying why not. */
export async function listen(server: Server, host: string, port: number, flag = "--port"): Promise<number> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    const code = (err as { code?: string }).code;
    const why = code === "EADDRINUSE" ? `the address is in use; pick another ${flag} (0 picks a free one)` : (err as Error).message;
    throw new EdgeplanError(`cannot listen on ${urlHost(host)}:${port}: ${why}`, { cause: err });
  }
  return (server.address() as AddressInfo).port;
}

/** Closes `server` once its connections end, cutting those still open after `timeoutMs`; resolves with the number cut. */
export function closeServer(server: Server, timeoutMs: number): Promise<number> {
  return new Promise((resolve) => {
    let cut = 0;
    const force = setTimeout(() => {
      server.getConnections((_, n) => {
        cut = n ?? 0;
        server.closeAllConnections();
      });
    }, timeoutMs);
    server.close(() => {
      clearTimeout(force);
      resolve(cut);
    });
    server.closeIdleConnections();
  });
}
