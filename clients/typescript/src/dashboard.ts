// Dashboard: step outcomes and run summaries, and a live watch
// (proto/query.proto).
//
//   const d = new Dashboard("ledger:7420");
//   for (const step of await d.steps("team-a", { states: ["unknown"] })) console.log(step.run_id, step.step_id);
//   for await (const change of d.watch("team-a")) ...  // the past, then live; resumes after a disconnect
//
// Calls reject with the grpc.ServiceError of the ledger (e.g.
// PERMISSION_DENIED for a team the certificate's identity may not query).
// Enums are their protos' names ("STEP_STATE_UNKNOWN"); stateName() gives
// "unknown". Integers are numbers (exact: the contract keeps them within
// +-(2^53-1)).
import * as grpc from "@grpc/grpc-js";

import { channelArgs, ConnectionOptions, QueryService, QueryServiceClient, unary } from "./stubs";

export type StateName = "pending" | "succeeded" | "failed" | "denied" | "unknown";
export type StepState = "STEP_STATE_UNSPECIFIED" | `STEP_STATE_${Uppercase<StateName>}`;
export type AnomalyName = "late_completion" | "orphan_completion" | "duplicate_completion" |
  "conflicting_completion" | "mismatched_completion" | "completion_after_deny" | "duplicate_start";

export interface CallTotals {
  model_calls_allowed: number;
  model_calls_denied: number;
  tool_calls_allowed: number;
  tool_calls_denied: number;
  input_tokens: number;
  output_tokens: number;
  cost_micros: number;
}

/** A step's outcome (proto/query.proto, Step; the fields are described there). */
export interface Step {
  team: string;
  run_id: string;
  step_id: string;
  attempt: number;
  state: StepState;
  exec_status: string;
  workflow: string;
  agent: string;
  first_at_us: number;
  has_start: boolean;
  start_seq: number;
  start_receipt_id: string;
  started_at_us: number;
  decision: string;
  reason: string;
  timeout_ms: number;
  timeout_at_us: number;
  cost_reserved_micros: number;
  has_completion: boolean;
  completion_seq: number;
  completion_receipt_id: string;
  completed_at_us: number;
  exit_code: number;
  duration_ms: number;
  exec_cost_micros: number;
  has_unknown: boolean;
  unknown_seq: number;
  unknown_at_us: number;
  deadline_us: number;
  anomalies: string[];
  calls: CallTotals;
  actual_cost_micros: number;
  charged_cost_micros: number;
  seqs: number[];
  last_seq: number;
  trace_id: string;
}

/** A run's summary (proto/query.proto, Run). */
export interface Run {
  team: string;
  run_id: string;
  workflow: string;
  first_seq: number;
  last_seq: number;
  first_at_us: number;
  last_at_us: number;
  entries: number;
  steps_pending: number;
  steps_succeeded: number;
  steps_failed: number;
  steps_denied: number;
  steps_unknown: number;
  unknown_steps: { step_id: string; attempt: number }[];
  calls: CallTotals;
  unattached_calls: CallTotals;
  actual_cost_micros: number;
  charged_cost_micros: number;
  anomalies: number;
}

/** One change of a step, as of the entry `seq` (the step without `seqs`). */
export interface StepChange {
  seq: number;
  step: Step;
}

/** A step's state by name: "pending", "succeeded", "failed", "denied" or "unknown". */
export function stateName(state: StepState): StateName {
  return state.slice("STEP_STATE_".length).toLowerCase() as StateName;
}

export interface StepsOptions {
  run?: string;
  /** States by name, e.g. ["unknown"]. */
  states?: StateName[];
  /** Anomalies by name, e.g. ["late_completion"]. */
  anomalies?: AnomalyName[];
  /** Steps at most (100). */
  limit?: number;
}

export interface WatchOptions {
  run?: string;
  states?: StateName[];
  /** Changes after this seq (-1: from the start of the log). */
  afterSeq?: number;
  /** Reconnect after UNAVAILABLE (true). */
  retry?: boolean;
}

export interface DashboardOptions extends ConnectionOptions {
  /** Deadline of each call but the watch (10 s). */
  timeoutMs?: number;
}

// The longest wait before a watch or the channel tries the ledger again.
const RECONNECT_MS = 1000;

const STATES: readonly string[] = ["pending", "succeeded", "failed", "denied", "unknown"];
const ANOMALIES: readonly string[] = ["late_completion", "orphan_completion", "duplicate_completion",
  "conflicting_completion", "mismatched_completion", "completion_after_deny", "duplicate_start"];

function names(field: string, given: readonly string[] | undefined, known: readonly string[],
               prefix: string): string[] {
  return (given ?? []).map((name) => {
    if (!known.includes(name)) throw new RangeError(`${field}: '${name}' is not one of ${known.join(", ")}`);
    return prefix + name.toUpperCase();
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class Dashboard {
  private readonly client: QueryServiceClient;
  private readonly timeoutMs: number;

  /** `target` is HOST:PORT; plain text to a loopback address only, unless `insecure` (as the Emitter's). */
  constructor(target: string, options: DashboardOptions = {}) {
    this.client = new QueryService(target, ...channelArgs(target, options, RECONNECT_MS));
    this.timeoutMs = options.timeoutMs ?? 10000;
  }

  close(): void {
    this.client.close();
  }

  /** Steps newest first. */
  async steps(team: string, options: StepsOptions = {}): Promise<Step[]> {
    const limit = options.limit ?? 100;
    const filter = this.filter(team, options.run, options.states, options.anomalies);
    const out: Step[] = [];
    let page_token = "";
    while (out.length < limit) {
      const page = await unary<{ steps: Step[]; next_page_token: string }>((done) => this.client.ListSteps(
        { filter, page_size: Math.min(1000, limit - out.length), page_token }, this.callOptions(), done));
      out.push(...page.steps);
      page_token = page.next_page_token;
      if (!page_token) break;
    }
    return out;
  }

  step(team: string, run: string, step: string, attempt = 1): Promise<Step> {
    const request = { team, run_id: run, step_id: step, attempt };
    return unary((done) => this.client.GetStep(request, this.callOptions(), done));
  }

  run(team: string, run: string): Promise<Run> {
    return unary((done) => this.client.GetRun({ team, run_id: run }, this.callOptions(), done));
  }

  async runs(team: string, limit = 100): Promise<Run[]> {
    const page = await unary<{ runs: Run[] }>((done) => this.client.ListRuns(
      { team, page_size: Math.min(limit, 1000) }, this.callOptions(), done));
    return page.runs;
  }

  /** Step changes after `afterSeq`, the past then live, until the caller
   * stops iterating. On UNAVAILABLE it reconnects after the last change
   * received: no gap, no duplicate. Any other error ends it, thrown. With
   * `retry`, each call waits for the ledger to be there (waitForReady)
   * rather than failing while the channel is between connection attempts,
   * so a watch resumes within about a second of the ledger's return,
   * however long it was away. */
  async *watch(team: string, options: WatchOptions = {}): AsyncGenerator<StepChange, void, undefined> {
    const filter = this.filter(team, options.run, options.states, []);
    let after_seq = options.afterSeq ?? -1;
    let backoff = 100;
    for (;;) {
      const call = this.client.WatchSteps({ filter, after_seq },
                                          new grpc.Metadata({ waitForReady: options.retry !== false }));
      try {
        for await (const change of call as AsyncIterable<StepChange>) {
          after_seq = change.seq;
          backoff = 100;
          yield change;
        }
        return;
      } catch (e) {
        if (options.retry === false || (e as grpc.ServiceError).code !== grpc.status.UNAVAILABLE) throw e;
        await sleep(backoff);
        backoff = Math.min(backoff * 2, RECONNECT_MS);
      } finally {
        call.on("error", () => {});  // the CANCELLED that cancel() reports
        call.cancel();
      }
    }
  }

  private filter(team: string, run?: string, states?: StateName[], anomalies?: AnomalyName[]) {
    return { team, run_id: run ?? "", states: names("states", states, STATES, "STEP_STATE_"),
             anomalies: names("anomalies", anomalies, ANOMALIES, "ANOMALY_") };
  }

  private callOptions(): grpc.CallOptions {
    return { deadline: Date.now() + this.timeoutMs };
  }
}
