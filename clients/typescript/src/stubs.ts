// The ledger's gRPC services, loaded at run time from the protos that the
// build copies into dist/proto (copy-protos.js).
//
// Messages are plain objects with the protos' field names (snake_case, as
// CONTRACT.md writes them). Decoded: 64-bit integers are numbers (the
// contract keeps every number within +-(2^53-1), so they are exact), enums
// are their names ("STEP_STATE_UNKNOWN"), unset fields take their defaults.
import { BlockList, isIP } from "net";
import * as path from "path";

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

const definition = protoLoader.loadSync(["ledger_service.proto", "query.proto"], {
  includeDirs: [path.join(__dirname, "proto")],
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
});
const v1 = (grpc.loadPackageDefinition(definition) as any).evidence.ledger.v1;

type Callback<T> = (error: grpc.ServiceError | null, response?: T) => void;

/** The calls of LedgerService this client makes. */
export interface LedgerServiceClient extends grpc.Client {
  Append(request: object, options: grpc.CallOptions, callback: Callback<any>): grpc.ClientUnaryCall;
}

/** The calls of QueryService this client makes. */
export interface QueryServiceClient extends grpc.Client {
  GetStep(request: object, options: grpc.CallOptions, callback: Callback<any>): grpc.ClientUnaryCall;
  ListSteps(request: object, options: grpc.CallOptions, callback: Callback<any>): grpc.ClientUnaryCall;
  GetRun(request: object, options: grpc.CallOptions, callback: Callback<any>): grpc.ClientUnaryCall;
  ListRuns(request: object, options: grpc.CallOptions, callback: Callback<any>): grpc.ClientUnaryCall;
  WatchSteps(request: object, metadata?: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<any>;
}

type ClientConstructor<T> = new (target: string, credentials: grpc.ChannelCredentials,
                                 options?: grpc.ChannelOptions) => T;

export const LedgerService: ClientConstructor<LedgerServiceClient> = v1.LedgerService;
export const QueryService: ClientConstructor<QueryServiceClient> = v1.QueryService;

/** Calls `method` as a Promise. */
export function unary<T>(call: (callback: Callback<T>) => unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    call((error, response) => (error ? reject(error) : resolve(response as T)));
  });
}

/** How to reach the ledger: plain text, or TLS with the CA that signed the
 * ledger's certificate and, for mutual TLS, the client's certificate and key
 * (PEM). `serverName` is the name the ledger's certificate is checked
 * against, when it is not the target's host. */
export interface Tls {
  ca: Buffer;
  cert?: Buffer;
  key?: Buffer;
  serverName?: string;
}

/** Options every client takes to reach the ledger. */
export interface ConnectionOptions {
  /** TLS, or plain text when absent (and `credentials` is absent): plain text
   * only to a loopback address (127.0.0.0/8, ::1, localhost) or a unix
   * socket, unless `insecure`; any other target is refused (Error) before
   * anything is dialed. */
  tls?: Tls;
  /** Channel credentials made by the caller; instead of `tls` (the caller's
   * choice: not checked). */
  credentials?: grpc.ChannelCredentials;
  /** Plain text to a target off this machine, where anyone on the way reads
   * the receipts and the ledger cannot tell who sent them. */
  insecure?: boolean;
  /** gRPC channel options (e.g. "grpc.max_reconnect_backoff_ms"). */
  channelOptions?: grpc.ChannelOptions;
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");  // and ::ffff:127.x.y.z, which BlockList matches against the IPv4 rule

/** Whether `target`, HOST:PORT or a gRPC name ("dns:///HOST:PORT",
 * "passthrough:///HOST:PORT", "unix:PATH"), stays on this machine. A name
 * with a DNS authority ("dns://SERVER/HOST:PORT") does not: that server
 * answers for the host. */
function isLoopback(target: string): boolean {
  if (target.startsWith("unix:")) return true;
  const scheme = ["dns:///", "passthrough:///"].find((s) => target.startsWith(s));
  let host = scheme ? target.slice(scheme.length) : target;
  if (host.startsWith("[")) {  // [IPV6]:PORT
    const end = host.indexOf("]");
    if (end < 0 || !/^(:.*)?$/.test(host.slice(end + 1))) return false;
    host = host.slice(1, end);
  } else if (host.split(":").length === 2) {  // HOST:PORT; more colons: an IPv6 address without a port
    host = host.slice(0, host.indexOf(":"));
  }
  if (host.toLowerCase() === "localhost") return true;
  const family = isIP(host);
  return family !== 0 && LOOPBACK.check(host, family === 4 ? "ipv4" : "ipv6");
}

/** Why a connection to `target` with `options` is refused before anything is
 * dialed (plain text to a target off this machine, not asked for); undefined
 * when it is not. */
export function plainTextRefusal(target: string, options: ConnectionOptions): string | undefined {
  if (options.tls || options.credentials || options.insecure || isLoopback(target)) return undefined;
  return `address ${JSON.stringify(target)} is not a loopback address: give TLS options (CA, certificate and key), ` +
    "or ask for plain text explicitly with insecure: true";
}

/** The credentials and channel options of a connection to `target`; Error
 * for plain text refused (plainTextRefusal). Unless the caller
 * says otherwise, a channel has connections of its own (grpc-js shares a
 * process's connections to one address among its channels, and with them
 * their reconnect back-off) and tries again after a failed connection within
 * `maxReconnectMs` (grpc-js waits up to 120 s by default, so a restarted
 * ledger would be reached long after it is back). */
export function channelArgs(target: string, options: ConnectionOptions,
                            maxReconnectMs: number): [grpc.ChannelCredentials, grpc.ChannelOptions] {
  const refusal = plainTextRefusal(target, options);
  if (refusal) throw new Error(refusal);
  const channelOptions: grpc.ChannelOptions = {
    "grpc.use_local_subchannel_pool": 1,
    "grpc.initial_reconnect_backoff_ms": Math.min(100, maxReconnectMs),
    "grpc.max_reconnect_backoff_ms": maxReconnectMs,
    ...options.channelOptions,
  };
  if (options.credentials && options.tls) {
    throw new TypeError("tls: give tls or credentials, not both");
  }
  if (options.credentials) return [options.credentials, channelOptions];
  if (!options.tls) return [grpc.credentials.createInsecure(), channelOptions];
  const { ca, cert, key, serverName } = options.tls;
  if (!cert !== !key) throw new TypeError("tls: cert and key go together (mutual TLS) or not at all");
  if (serverName) channelOptions["grpc.ssl_target_name_override"] = serverName;
  return [grpc.credentials.createSsl(ca, key ?? null, cert ?? null), channelOptions];
}

/** A message's fields as the protos declare them: name and type
 * ("TYPE_STRING", "TYPE_INT64", "TYPE_ENUM", ...). */
export function fieldsOf(message: string): { name: string; type: string }[] {
  const type = (definition[`evidence.ledger.v1.${message}`] as any).type;
  return type.field.map((f: { name: string; type: string }) => ({ name: f.name, type: f.type }));
}
