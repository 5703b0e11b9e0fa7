// A TypeScript client for the evidence ledger.
//
//   import { Emitter, Dashboard, receipts } from "evidence-ledger";
//
// Emitter sends receipts in batches in the background and retries with the
// same receipt_id until the ledger has them; Dashboard reads step outcomes
// and watches changes. scripts/dev-certs.sh makes certificates for trying TLS.
//
// Without `tls` (or `credentials`) a client dials plain text only to a
// loopback address (127.0.0.0/8, ::1, localhost) or a unix socket. Any other
// target, or any shard's address in a ShardMap, is refused before anything
// is dialed, with an Error:
//
//   address "10.0.0.5:7420" is not a loopback address: give TLS options (CA, certificate and key), or ask for plain text explicitly with insecure: true
//
// `insecure: true` in the options is that explicit request.
export { status } from "@grpc/grpc-js";
export * as receipts from "./receipts";
export type { Receipt } from "./receipts";
export { Dashboard, stateName } from "./dashboard";
export type {
  DashboardOptions, Run, Step, StepChange, StepState, StateName, StepsOptions, WatchOptions,
} from "./dashboard";
export { BufferFullError, ConfigurationError, DEFAULT_FLUSH_TIMEOUT_MS, Emitter, LEDGER_ID_PREFIX } from "./emitter";
export type { EmitterOptions, Logger, OnResult, Result } from "./emitter";
export { leaderNamed } from "./follow";
export { fnv1a64, ShardedDashboard, ShardedEmitter, ShardMap } from "./shards";
export type { ConnectionOptions, Tls } from "./stubs";
