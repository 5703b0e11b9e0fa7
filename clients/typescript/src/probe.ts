// Why a connection to the ledger failed, when the client's TLS options do not
// match what the server speaks: grpc-js says only "No connection
// established", so a probe of the server's TLS handshake tells. For saying
// what to give, never a security check (the server's certificate is not
// verified).
import * as grpc from "@grpc/grpc-js";
import * as tls from "node:tls";

import type { ConnectionOptions } from "./stubs";

/** What a server speaks: "tls" (took the handshake and waits, or sent an alert not about a client
 * certificate), "tls-closed" (closed the connection, or sent a certificate alert, once the handshake was done:
 * it wants a client certificate, or not the one given), "plain" (answered the TLS hello with bytes that are not
 * TLS); undefined when it cannot be reached or said nothing. */
export type Speaks = "tls" | "tls-closed" | "plain";

/** Handshakes with the server at `target` (HOST:PORT) as a gRPC client does (ALPN h2), presenting `cert` and
 * `key` when given, within `timeoutMs`. */
export function tlsProbe(target: string, client: { cert?: Buffer; key?: Buffer } = {},
                         timeoutMs = 3000): Promise<Speaks | undefined> {
  const bare = target.replace(/^(dns:\/\/\/|passthrough:\/\/\/)/, "");
  const at = bare.lastIndexOf(":");
  const host = bare.slice(0, at).replace(/^\[(.*)\]$/, "$1");
  const port = Number(bare.slice(at + 1));
  if (at < 0 || !Number.isInteger(port)) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    let secure = false;
    const socket = tls.connect({ host, port, rejectUnauthorized: false, ALPNProtocols: ["h2"], cert: client.cert,
                                 key: client.key, servername: /^[\d.:]+$/.test(host) ? undefined : host });
    const done = (speaks: Speaks | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(speaks);
    };
    let timer = setTimeout(() => done(secure ? "tls" : undefined), timeoutMs);
    socket.on("secureConnect", () => {
      secure = true;
      clearTimeout(timer);
      timer = setTimeout(() => done("tls"), 1000);  // a server that took the handshake waits for the client
    });
    socket.on("data", () => done("tls"));
    socket.on("end", () => done(secure ? "tls-closed" : undefined));
    socket.on("close", () => done(secure ? "tls-closed" : undefined));
    socket.on("error", (error: NodeJS.ErrnoException) => {
      const text = `${error.code ?? ""} ${error.message}`;
      if (secure) return done(/CERTIFICATE|certificate|ECONNRESET/.test(text) ? "tls-closed" : "tls");
      if (/WRONG_VERSION_NUMBER|wrong version number|PACKET_LENGTH_TOO_LONG|HTTP_REQUEST/.test(text)) {
        return done("plain");
      }
      done(/alert/i.test(text) ? "tls" : undefined);
    });
  });
}

/** What to give, when a request to `target` failed to connect and a probe (tlsProbe) shows that the
 * options do not match what the server speaks; undefined for any other failure. */
export async function tlsMismatch(code: grpc.status, message: string, target: string, options: ConnectionOptions,
                                  probe = tlsProbe): Promise<string | undefined> {
  if (code !== grpc.status.UNAVAILABLE || !message.startsWith("No connection established")) return undefined;
  if (/ECONNREFUSED|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH/.test(message)) return undefined;
  const speaks = await probe(target, { cert: options.tls?.cert, key: options.tls?.key });
  const server = `the server at ${target}`;
  const withTls = options.tls !== undefined || options.credentials !== undefined;
  if (!withTls) {
    if (speaks === "tls" || speaks === "tls-closed") return `${server} speaks TLS: give tls: { ca, cert, key }`;
    return undefined;
  }
  if (speaks === "plain") {
    return `${server} speaks plain text, not TLS: leave out tls (plain text goes to a loopback address only, ` +
           "or with insecure: true)";
  }
  if (speaks !== "tls-closed") return undefined;
  if (options.tls === undefined) {
    return `${server} closed the connection in the TLS handshake: it wants a client certificate issued by a CA ` +
           "it trusts";
  }
  if (options.tls.cert === undefined) return `${server} wants a client certificate: give tls.cert and tls.key`;
  return `${server} refused the client certificate (it closed the connection in the TLS handshake): give ` +
         "tls.cert and tls.key of a certificate issued by a CA it trusts";
}
