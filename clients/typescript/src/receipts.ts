// Receipts (CONTRACT section 3) and their constructors, with the fields a
// gateway or a worker always sets: a fresh receipt_id, occurred_at_us now.
//
//   receipts.modelCall("team-a", "run-1", "step-1", { model: "gpt-4o", decision: "allow", input_tokens: 12 })
//
// Field names are the contract's (snake_case). Every constructor takes the
// receipt's place (team, run_id, step_id) and an object with the fields every
// kind shares (Common) and the kind's own. Decisions and statuses are names
// ("allow", "timed_out", ...) or the protos' numbers.
//
// Integers are numbers: the contract keeps every number of a receipt within
// +-(2^53-1), where a number is exact (a bigint would only add a conversion
// at every use). A number that is not an integer is a TypeError: protobuf
// would drop its fraction without a word. Everything else (formats, lengths,
// ranges) is the ledger's to check: it refuses a bad receipt naming the field
// and the rule, and the Emitter reports it.
import { randomUUID } from "crypto";

import { fieldsOf } from "./stubs";

export type DecisionName = "allow" | "deny";
export type StatusName = "succeeded" | "failed" | "timed_out" | "killed" | "error";

/** The protos' numbers of the decisions (proto/receipt.proto, Decision). */
export const Decision = { ALLOW: 1, DENY: 2 } as const;
/** The protos' numbers of the statuses (proto/receipt.proto, ExecStatus). */
export const ExecStatus = { SUCCEEDED: 1, FAILED: 2, TIMED_OUT: 3, KILLED: 4, ERROR: 5 } as const;

/** The fields every kind shares. */
export interface Common {
  /** Unique per team; a fresh one when not given. Retries reuse it: the
   * ledger appends (team, receipt_id) once. */
  receipt_id?: string;
  /** The step's attempt (the ledger takes 1 when not given). */
  attempt?: number;
  /** When it happened, microseconds since the epoch (now when not given, or 0). */
  occurred_at_us?: number;
  workflow?: string;
  agent?: string;
  /** W3C trace context: 32 lowercase hex digits. */
  trace_id?: string;
  /** 16 lowercase hex digits. */
  span_id?: string;
  attributes?: Record<string, string>;
}

/** A container step was authorized or denied. `timeout_ms`: after it, plus
 * the ledger's grace, a step with no agent_exec is declared unknown;
 * `cost_reserved_micros`: what an unknown or failed step is charged at least. */
export interface AgentStart {
  decision?: number;
  reason?: string;
  timeout_ms?: number;
  cost_reserved_micros?: number;
  namespace?: string;
  sandbox?: string;
  command_sha256?: string;
  credential_id?: string;
  classification?: string;
}

/** A container step finished; `start_receipt_id` is its agent_start's receipt_id. */
export interface AgentExec {
  start_receipt_id: string;
  status?: number;
  exit_code?: number;
  duration_ms?: number;
  output_sha256?: string;
  output_bytes?: number;
  dlp_findings?: number;
  cost_micros?: number;
}

/** A model call the gateway allowed or denied. */
export interface ModelCall {
  provider?: string;
  model?: string;
  route?: string;
  decision?: number;
  /** The policy's reason, for a denial. */
  reason?: string;
  input_tokens?: number;
  output_tokens?: number;
  cost_micros?: number;
  request_sha256?: string;
  response_sha256?: string;
  status_code?: number;
  latency_ms?: number;
  credential_id?: string;
}

/** A tool call the gateway allowed or denied. */
export interface ToolCall {
  tool?: string;
  target?: string;
  decision?: number;
  reason?: string;
  request_sha256?: string;
  response_sha256?: string;
  status_code?: number;
  latency_ms?: number;
  cost_micros?: number;
  credential_id?: string;
}

interface Base extends Common {
  receipt_id: string;
  team: string;
  run_id: string;
  step_id: string;
  occurred_at_us: number;
}

export type AgentStartReceipt = Base & { agent_start: AgentStart };
export type AgentExecReceipt = Base & { agent_exec: AgentExec };
export type ModelCallReceipt = Base & { model_call: ModelCall };
export type ToolCallReceipt = Base & { tool_call: ToolCall };
/** A receipt as the Emitter sends it: proto/receipt.proto's Receipt. */
export type Receipt = AgentStartReceipt | AgentExecReceipt | ModelCallReceipt | ToolCallReceipt;
export type Kind = "agent_start" | "agent_exec" | "model_call" | "tool_call";

type Named<T> = { [K in keyof T]: K extends "decision" ? DecisionName | number
                                   : K extends "status" ? StatusName | number : T[K] };
export type AgentStartFields = Common & Named<AgentStart>;
export type AgentExecFields = Common & Named<Omit<AgentExec, "start_receipt_id">>;
export type ModelCallFields = Common & Named<ModelCall>;
export type ToolCallFields = Common & Named<ToolCall>;

export const ALLOW: DecisionName = "allow";
export const DENY: DecisionName = "deny";
export const SUCCEEDED: StatusName = "succeeded";
export const FAILED: StatusName = "failed";
export const TIMED_OUT: StatusName = "timed_out";
export const KILLED: StatusName = "killed";
export const ERROR: StatusName = "error";

const COMMON = ["receipt_id", "attempt", "occurred_at_us", "workflow", "agent", "trace_id", "span_id", "attributes"];
const INT64_COMMON = ["attempt", "occurred_at_us"];
const ENUMS: Record<string, Record<string, number>> = {
  decision: { allow: Decision.ALLOW, deny: Decision.DENY },
  status: { succeeded: 1, failed: 2, timed_out: 3, killed: 4, error: 5 },
};
const MESSAGES: Record<Kind, string> = {
  agent_start: "AgentStart", agent_exec: "AgentExec", model_call: "ModelCall", tool_call: "ToolCall",
};

function enumValue(field: string, value: unknown): number {
  if (typeof value === "number") return value;
  const names = ENUMS[field];
  if (typeof value !== "string" || !Object.hasOwn(names, value)) {
    throw new RangeError(`${field}: '${value}' is not one of ${Object.keys(names).join(", ")}`);
  }
  return names[value];
}

function integer(field: string, value: unknown): unknown {
  if (typeof value === "number" && !Number.isInteger(value)) {
    throw new TypeError(`${field}: ${value} is not an integer`);
  }
  return value;
}

function build(kind: Kind, team: string, run_id: string, step_id: string, fields: Record<string, unknown>): Receipt {
  const own = new Map(fieldsOf(MESSAGES[kind]).map((f) => [f.name, f.type]));
  const receipt: Record<string, unknown> = { team, run_id, step_id };
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined || value === null) continue;
    if (COMMON.includes(name)) {
      receipt[name] = INT64_COMMON.includes(name) ? integer(name, value) : value;
    } else if (!own.has(name)) {
      throw new TypeError(`${kind}: '${name}' is not a field of ${kind} (its fields: ${[...own.keys()].join(", ")})`);
    } else {
      const type = own.get(name);
      body[name] = type === "TYPE_ENUM" ? enumValue(name, value) : type === "TYPE_INT64" ? integer(name, value) : value;
    }
  }
  receipt.receipt_id ||= `${kind}-${randomUUID().replace(/-/g, "")}`;
  receipt.occurred_at_us ||= Math.floor((performance.timeOrigin + performance.now()) * 1000);
  receipt[kind] = body;
  return receipt as unknown as Receipt;
}

/** A container step was authorized or denied. */
export function agentStart(team: string, run_id: string, step_id: string,
                           fields: AgentStartFields = {}): AgentStartReceipt {
  return build("agent_start", team, run_id, step_id, { ...fields }) as AgentStartReceipt;
}

/** A container step finished; `start_receipt_id` is its agent_start's receipt_id. */
export function agentExec(team: string, run_id: string, step_id: string, start_receipt_id: string,
                          fields: AgentExecFields = {}): AgentExecReceipt {
  return build("agent_exec", team, run_id, step_id, { ...fields, start_receipt_id }) as AgentExecReceipt;
}

/** A model call the gateway allowed or denied. */
export function modelCall(team: string, run_id: string, step_id: string,
                          fields: ModelCallFields = {}): ModelCallReceipt {
  return build("model_call", team, run_id, step_id, { ...fields }) as ModelCallReceipt;
}

/** A tool call the gateway allowed or denied. */
export function toolCall(team: string, run_id: string, step_id: string, fields: ToolCallFields = {}): ToolCallReceipt {
  return build("tool_call", team, run_id, step_id, { ...fields }) as ToolCallReceipt;
}

/** The receipt's kind: the body it carries. */
export function kindOf(receipt: Receipt): Kind {
  for (const kind of Object.keys(MESSAGES) as Kind[]) {
    if (kind in receipt) return kind;
  }
  throw new TypeError("receipt: no body (agent_start, agent_exec, model_call or tool_call)");
}
