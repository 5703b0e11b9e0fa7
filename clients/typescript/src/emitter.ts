// Emitter: sends receipts to the ledger in batches, in the background.
//
//   const emitter = new Emitter("ledger:7420");
//   await emitter.emit(receipts.modelCall("team-a", "run-1", "step-1", { ... }));
//   if (!(await emitter.close())) keep(emitter.unsettled);  // flushes, 30 s at most by default
//   for (const result of emitter.refused) ...
//
// Guarantees:
//   - A receipt is settled when the ledger acknowledged it (appended, or
//     already there: a retry answered as a duplicate) or refused it for good
//     (INVALID_ARGUMENT, PERMISSION_DENIED, ALREADY_EXISTS, ...). Refusals go
//     to `onResult` and to `refused`; nothing is dropped silently.
//   - UNAVAILABLE, RESOURCE_EXHAUSTED and DEADLINE_EXCEEDED, for a whole
//     request or for single receipts, are retried with the same receipt_id
//     after an exponential back-off with jitter: the ledger appends a
//     (team, receipt_id) once, so retries never make duplicates. Receipt ids
//     are unique per team only; ids starting with "ledger." are the ledger's
//     and refused at emit.
//   - The buffer is bounded (`maxBuffer` receipts not yet settled): emit()
//     waits until there is room (`block`, up to `emitTimeoutMs`) or rejects
//     with BufferFullError.
//   - flush() and close() wait `flushTimeoutMs` (30 s) unless told otherwise
//     (Infinity waits for good). close() that could not flush in time
//     resolves to false and leaves the receipts it could not settle in
//     `unsettled`, for the caller to keep.
//   - `onResult(receipt, result)` is called once per receipt when it is
//     settled. What it throws (or the promise it returns rejects with) is
//     logged with `logger.error`, counted in `callbackErrors`, and never stops
//     the sender. Keep it quick: it runs before the next batch is sent.
//   - Every retry is logged with `logger.warn`: the receipts' count, the delay
//     and the reason (the gRPC code and message).
//   - A configuration error is never retried: a whole request refused with
//     UNAUTHENTICATED or PERMISSION_DENIED, or a connection that fails
//     because the TLS options do not match what the server speaks (learned
//     from a probe of its TLS handshake, probe.ts: "the server at HOST:PORT
//     speaks TLS: give tls: { ca, cert, key }"). The batch and every receipt
//     queued are settled as refused with it (FAILED_PRECONDITION and that
//     message for a TLS mismatch), it is logged once with `logger.error`,
//     kept in `failure`, and emit() rejects with ConfigurationError from
//     then on: every later receipt would meet it too.
//   - Replicated shards: `target` may name several nodes of the shard (an
//     array, or one string of addresses separated by commas). A node that
//     follows refuses an append with UNAVAILABLE naming the leader
//     (`leader=HOST:PORT`): the batch goes there at once, with the same TLS
//     options (the server name checked as before) and channel options, and
//     so do the next ones. When the followed leader fails (UNAVAILABLE or a
//     deadline) the emitter goes back to the configured nodes, and on each
//     such failure moves on to the next of them. The receipt_id stays the
//     same on every node, so no receipt is appended twice (follow.ts).
//   - While receipts are unsettled the sender's retries keep Node running;
//     once all are settled nothing does. A process ends its emitting with
//     close(), which bounds the wait and names what is left.
//
// Thread-safety: none needed; every method runs on Node's event loop, and
// the sender is a task on it. Timeouts run on the monotonic clock
// (performance.now()), the RPC deadline on the wall clock, as gRPC wants.
import * as grpc from "@grpc/grpc-js";

import { leaderNamed, parseTargets, Targets } from "./follow";
import { tlsMismatch } from "./probe";
import type { Receipt } from "./receipts";
import { channelArgs, ConnectionOptions, LedgerService, LedgerServiceClient, plainTextRefusal } from "./stubs";

/** How the ledger settled a receipt. */
export interface Result {
  receipt_id: string;
  /** OK when appended (or already there); else why it was refused
   * (grpc.status[code] names it). */
  code: grpc.status;
  /** The refusal's message, naming the field and the rule; "" when OK. */
  message: string;
  /** The entry's position in the log when OK. */
  seq: number;
  /** OK because the ledger already held this receipt (a retry). */
  duplicate: boolean;
}

export type OnResult = (receipt: Receipt, result: Result) => unknown;

/** Where the Emitter reports retries and failing callbacks (console by default). */
export interface Logger {
  warn(message: string): void;
  error(message: string, error: unknown): void;
}

export interface EmitterOptions extends ConnectionOptions {
  /** Receipts per Append request (200; at most 1000, the ledger's limit). */
  batchSize?: number;
  /** How long a batch may wait to fill (20 ms). */
  lingerMs?: number;
  /** Receipts not yet settled that the emitter holds at most (10000). */
  maxBuffer?: number;
  /** emit() waits for room in a full buffer (true), or rejects at once (false). */
  block?: boolean;
  /** How long emit() waits for room (30 s). */
  emitTimeoutMs?: number;
  /** Deadline of one Append request (10 s). */
  rpcTimeoutMs?: number;
  /** The longest back-off between retries (5 s); also the channel's longest reconnect back-off, so that
   * a ledger back from a restart is sent to within about twice this. */
  maxBackoffMs?: number;
  /** How long flush() and close() wait when not told (DEFAULT_FLUSH_TIMEOUT_MS, 30 s). */
  flushTimeoutMs?: number;
  onResult?: OnResult;
  logger?: Logger;
}

/** emit() found the buffer full (and was told not to wait, or waited in vain). */
export class BufferFullError extends Error {
  override name = "BufferFullError";
}

/** What stopped an emitter (`failure`), and what emit() rejects with from then on: its TLS options do not
 * match what the server speaks, or the ledger refused its identity (UNAUTHENTICATED, PERMISSION_DENIED). */
export class ConfigurationError extends Error {
  override name = "ConfigurationError";
}

const REFUSED_CALLER = new Set([grpc.status.UNAUTHENTICATED, grpc.status.PERMISSION_DENIED]);

/** Receipt ids the ledger keeps for itself (CONTRACT section 3). */
export const LEDGER_ID_PREFIX = "ledger.";

const RETRYABLE = new Set([grpc.status.UNAVAILABLE, grpc.status.RESOURCE_EXHAUSTED, grpc.status.DEADLINE_EXCEEDED]);
const FIRST_BACKOFF_MS = 50;

/** How long flush() and close() wait unless told otherwise. */
export const DEFAULT_FLUSH_TIMEOUT_MS = 30000;

interface AppendResult {
  seq: number;
  duplicate: boolean;
  code: number;
  message: string;
}
// Stands for the result of a receipt that a response lacks (the ledger
// answers every receipt): sent again, as the ledger appends it once.
const MISSING: AppendResult = { seq: 0, duplicate: false, code: grpc.status.INTERNAL,
                                message: "the ledger's response has no result for this receipt" };

export class Emitter {
  /** After close(): the receipts never settled, in the order they were emitted. */
  unsettled: Receipt[] = [];
  /** Receipts the ledger refused for good, in the order they were settled. */
  readonly refused: Result[] = [];
  /** Receipts the ledger appended or already held. */
  acknowledged = 0;
  /** Of them, those it already held. */
  duplicates = 0;
  /** Receipts sent again (a batch of 10 sent twice counts 10). */
  retries = 0;
  /** Errors onResult threw (logged, then ignored). */
  callbackErrors = 0;
  /** The configuration error that stopped the emitter, if one did. */
  failure?: ConfigurationError;

  private client: LedgerServiceClient;
  private connected: string;  // the target `client` is to
  private readonly targets: Targets;
  private readonly connection: ConnectionOptions;
  private readonly batchSize: number;
  private readonly lingerMs: number;
  private readonly maxBuffer: number;
  private readonly block: boolean;
  private readonly emitTimeoutMs: number;
  private readonly rpcTimeoutMs: number;
  private readonly maxBackoffMs: number;
  private readonly flushTimeoutMs: number;
  private readonly onResult?: OnResult;
  private readonly logger: Logger;
  private queue: Receipt[] = [];  // not yet sent, or sent and to be retried
  private pending = 0;            // queued + in flight
  private closed = false;
  private stopped = false;
  private wakeups: (() => void)[] = [];
  private closing?: Promise<boolean>;
  private readonly answered = new Set<string>();  // targets that answered a request
  private readonly sender: Promise<void>;

  /** `target` is HOST:PORT, or the nodes of a replicated shard: an array of them, or one string of them
   * separated by commas ("node-a:7420,node-b:7420"). TypeError for an onResult that is not a function or a
   * target without a node; Error, before anything is dialed, for plain text to a target that is not a
   * loopback address without `insecure` (a leader that a node names is followed only where a target would
   * be dialed). */
  constructor(target: string | readonly string[], options: EmitterOptions = {}) {
    if (options.onResult !== undefined && typeof options.onResult !== "function") {
      throw new TypeError("onResult: must be a function onResult(receipt, result), not " +
                          JSON.stringify(options.onResult));
    }
    for (const name of ["batchSize", "maxBuffer"] as const) {
      const value = options[name];
      if (value !== undefined && !(Number.isInteger(value) && value >= 1)) {
        throw new RangeError(`${name}: must be an integer of at least 1, not ${value}`);
      }
    }
    this.batchSize = Math.min(options.batchSize ?? 200, 1000);
    this.lingerMs = options.lingerMs ?? 20;
    this.maxBuffer = options.maxBuffer ?? 10000;
    this.block = options.block ?? true;
    this.emitTimeoutMs = options.emitTimeoutMs ?? 30000;
    this.rpcTimeoutMs = options.rpcTimeoutMs ?? 10000;
    this.maxBackoffMs = options.maxBackoffMs ?? 5000;
    this.flushTimeoutMs = options.flushTimeoutMs ?? DEFAULT_FLUSH_TIMEOUT_MS;
    this.onResult = options.onResult;
    this.logger = options.logger ?? console;
    const targets = parseTargets(target);
    for (const t of targets) {
      const refusal = plainTextRefusal(t, options);
      if (refusal) throw new Error(refusal);
    }
    this.connection = options;
    this.targets = new Targets(targets, (address) => plainTextRefusal(address, options) === undefined);
    this.connected = targets[0];
    this.client = new LedgerService(targets[0], ...channelArgs(targets[0], options, this.maxBackoffMs));
    this.sender = this.run().catch((error) => {
      this.logger.error("the emitter's sender stopped: nothing more is sent", error);
    });
  }

  /** Queues a receipt (made with `receipts`). Rejects with TypeError for a
   * receipt without its id, RangeError for an id of the ledger's,
   * BufferFullError when the buffer stays full, Error after close,
   * ConfigurationError once the emitter met one (`failure`). While
   * the buffer has room the receipt is queued before the first await, so
   * emits that are not awaited keep their order. */
  async emit(receipt: Receipt): Promise<void> {
    if (!receipt.receipt_id) throw new TypeError("receipt_id: required (retries rely on it)");
    if (receipt.receipt_id.startsWith(LEDGER_ID_PREFIX)) {
      throw new RangeError(`receipt_id: '${receipt.receipt_id}' is in the ledger's namespace: ids starting with ` +
                           `'${LEDGER_ID_PREFIX}' are written by the ledger only`);
    }
    const deadline = performance.now() + this.emitTimeoutMs;
    for (;;) {
      if (this.failure) throw new ConfigurationError(this.failure.message);
      if (this.closed) throw new Error("emitter is closed");
      if (this.pending < this.maxBuffer) break;
      const left = deadline - performance.now();
      if (!this.block || left <= 0) {
        throw new BufferFullError(`maxBuffer: ${this.pending} receipts are not settled yet`);
      }
      await this.changed(left);
    }
    this.queue.push(receipt);
    this.pending++;
    this.notify();
  }

  /** Resolves to true once every receipt emitted so far is settled, or to
   * false after `timeoutMs` (default: flushTimeoutMs; Infinity: for good). */
  async flush(timeoutMs: number = this.flushTimeoutMs): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (this.pending > 0) {
      const left = deadline - performance.now();
      if (left <= 0) return false;
      await this.changed(left);
    }
    return true;
  }

  /** Flushes (as flush(timeoutMs)), then stops the sender and closes the
   * channel. False if the flush timed out; the receipts not settled are then
   * in `unsettled`, for the caller to keep. Calls after the first resolve as
   * the first does. */
  close(timeoutMs: number = this.flushTimeoutMs): Promise<boolean> {
    this.closing ??= this.shutDown(timeoutMs);
    return this.closing;
  }

  private async shutDown(timeoutMs: number): Promise<boolean> {
    const flushed = await this.flush(timeoutMs);
    this.closed = true;
    this.stopped = true;
    this.notify();
    await this.sender;
    this.client.close();
    this.unsettled = this.queue;
    this.queue = [];
    return flushed;
  }

  private notify(): void {
    const wakeups = this.wakeups;
    this.wakeups = [];
    for (const wake of wakeups) wake();
  }

  /** Resolves at the next notify(), or after `ms`. */
  private changed(ms = Infinity): Promise<void> {
    return new Promise((resolve) => {
      const timer = Number.isFinite(ms) ? setTimeout(resolve, Math.max(0, ms)) : undefined;
      this.wakeups.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private async sleep(ms: number): Promise<void> {
    const deadline = performance.now() + ms;
    while (!this.stopped && performance.now() < deadline) await this.changed(deadline - performance.now());
  }

  private settle(receipt: Receipt, result: Result): void {
    this.pending--;
    if (result.code === grpc.status.OK) {
      this.acknowledged++;
      if (result.duplicate) this.duplicates++;
    } else {
      this.refused.push(result);
    }
    this.notify();
    if (!this.onResult) return;
    const failed = (error: unknown) => {
      this.callbackErrors++;
      this.logger.error(`onResult threw for receipt ${result.receipt_id} (${grpc.status[result.code]}); ` +
                        "the emitter goes on", error);
    };
    try {
      const returned = this.onResult(receipt, result);
      if (returned instanceof Promise) returned.catch(failed);
    } catch (error) {
      failed(error);
    }
  }

  private async take(): Promise<Receipt[] | null> {
    while (this.queue.length === 0 && !this.closed) await this.changed();
    if (this.queue.length === 0 || this.stopped) return null;
    const deadline = performance.now() + this.lingerMs;
    while (this.queue.length < this.batchSize && !this.stopped && performance.now() < deadline) {
      await this.changed(deadline - performance.now());  // let a batch fill
    }
    return this.queue.splice(0, this.batchSize);
  }

  private append(batch: Receipt[]): Promise<AppendResult[]> {
    return new Promise((resolve, reject) => {
      this.client.Append({ receipts: batch }, { deadline: Date.now() + this.rpcTimeoutMs },
                         (error, response) => (error ? reject(error) : resolve(response.results)));
    });
  }

  private async run(): Promise<void> {
    let backoff = FIRST_BACKOFF_MS;
    for (;;) {
      const batch = await this.take();
      if (!batch) return;
      let results: AppendResult[];
      try {
        results = await this.append(batch);
      } catch (e) {
        const error = e as grpc.ServiceError;
        if (await this.configurationError(batch, error.code, error.details)) continue;
        if (RETRYABLE.has(error.code)) {
          this.requeue(batch);
          if (!this.failed(error.code, error.details)) {
            await this.pause(backoff, batch.length, error.code, error.details);
            backoff = Math.min(backoff * 2, this.maxBackoffMs);
          }
        } else {
          for (const r of batch) {
            this.settle(r, { receipt_id: r.receipt_id, code: error.code, message: error.details, seq: 0,
                             duplicate: false });
          }
        }
        continue;
      }
      this.targets.accepted();
      this.answered.add(this.connected);
      const retry: Receipt[] = [];
      let why: AppendResult | undefined;
      batch.forEach((r, i) => {
        const result = results[i] ?? MISSING;
        if (RETRYABLE.has(result.code) || result === MISSING) {
          retry.push(r);
          why ??= result;
        } else {
          this.settle(r, { receipt_id: r.receipt_id, code: result.code, message: result.message, seq: result.seq,
                           duplicate: result.duplicate });
        }
      });
      if (why) {
        this.requeue(retry);
        if (leaderNamed(why.code, why.message) === undefined || !this.failed(why.code, why.message)) {
          await this.pause(backoff, retry.length, why.code, why.message);
          backoff = Math.min(backoff * 2, this.maxBackoffMs);
        }
      } else {
        backoff = FIRST_BACKOFF_MS;
      }
    }
  }

  /** When a request failed for a reason no retry mends (the guarantees above): settles the batch and every
   * receipt queued as refused with it, logs it, keeps it in `failure`; true then. */
  private async configurationError(batch: Receipt[], code: grpc.status, message: string): Promise<boolean> {
    let why: string | undefined;
    if (REFUSED_CALLER.has(code)) {
      why = `${grpc.status[code]}: ${message}`;
    } else {
      const tls = this.connection.tls !== undefined || this.connection.credentials !== undefined;
      if (tls && this.answered.has(this.connected)) return false;  // it took these options before
      why = await tlsMismatch(code, message, this.connected, this.connection);
      if (why === undefined) return false;
      code = grpc.status.FAILED_PRECONDITION;
      message = why;
    }
    this.failure = new ConfigurationError(why);
    const queued = this.queue;
    this.queue = [];
    this.logger.error(`${why}; the emitter stops: ${batch.length + queued.length} receipt(s) refused, and emit() ` +
                      "rejects with ConfigurationError", this.failure);
    for (const r of [...batch, ...queued]) {
      this.settle(r, { receipt_id: r.receipt_id, code, message, seq: 0, duplicate: false });
    }
    return true;
  }

  /** Moves to the target to send to after a failure (Targets.failed), logging a leader followed, and opens a
   * channel to it: true when the batch goes again at once. */
  private failed(code: grpc.status, message: string): boolean {
    const before = this.targets.current;
    const atOnce = this.targets.failed(code, message);
    const target = this.targets.current;
    if (target === this.connected) return atOnce;
    if (this.targets.followed !== undefined) {
      this.logger.warn(`${before} does not lead: following the leader it names at ${target}: ` +
                       `${grpc.status[code]}: ${message}`);
    }
    this.client.close();
    this.client = new LedgerService(target, ...channelArgs(target, this.connection, this.maxBackoffMs));
    this.connected = target;
    return atOnce;
  }

  /** Logs the retry, then sleeps for the back-off with jitter, or until close stops the sender. */
  private async pause(backoffMs: number, count: number, code: grpc.status, message: string): Promise<void> {
    const delay = backoffMs * (0.5 + Math.random());
    const seconds = (delay / 1000).toFixed(2);
    this.logger.warn(`retrying ${count} receipt(s) in ${seconds} s: ${grpc.status[code]}: ${message}`);
    await this.sleep(delay);
  }

  private requeue(batch: Receipt[]): void {
    this.retries += batch.length;
    this.queue.unshift(...batch);  // first again, in order
  }
}
