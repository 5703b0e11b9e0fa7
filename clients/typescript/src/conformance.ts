// The TypeScript client's conformance runner (clients/conformance/PROTOCOL.md).
//
//   node clients/typescript/dist/conformance.js < scenario
//
// Reads one line of JSON, the scenario, from standard input; builds its
// receipts with `receipts`' constructors; plays its steps through Emitter and
// Dashboard only, writing one JSON event per line to standard output (pipes
// are written synchronously on Linux: each event is out before the next
// step). Exits 0 after the last step; on anything the scenario did not
// expect writes {"event": "error", "message": ...} and exits 1.
import { readFileSync } from "fs";
import { createInterface } from "readline";

import { status } from "@grpc/grpc-js";

import { Dashboard, stateName } from "./dashboard";
import { BufferFullError, Emitter, EmitterOptions } from "./emitter";
import * as receipts from "./receipts";
import type { Tls } from "./stubs";

/** Something the scenario did not expect; the runner reports it and exits 1. */
class ScenarioError extends Error {}

type Spec = Record<string, any>;

const OPTIONS: Record<string, keyof EmitterOptions> = {
  batch_size: "batchSize", linger_ms: "lingerMs", max_buffer: "maxBuffer", block: "block",
  emit_timeout_ms: "emitTimeoutMs", flush_timeout_ms: "flushTimeoutMs", rpc_timeout_ms: "rpcTimeoutMs",
  max_backoff_ms: "maxBackoffMs",
};

/** The receipt of a spec, made by its kind's constructor; fields absent from the spec stay unset. */
function buildReceipt(spec: Spec): receipts.Receipt {
  const { kind, team = "", run_id = "", step_id = "", ...fields } = spec;
  try {
    switch (kind) {
      case "agent_start": return receipts.agentStart(team, run_id, step_id, fields);
      case "agent_exec": {
        const { start_receipt_id = "", ...rest } = fields;
        return receipts.agentExec(team, run_id, step_id, start_receipt_id, rest);
      }
      case "model_call": return receipts.modelCall(team, run_id, step_id, fields);
      case "tool_call": return receipts.toolCall(team, run_id, step_id, fields);
    }
  } catch (e) {
    throw new ScenarioError(`receipt ${spec.receipt_id}: ${(e as Error).message}`);
  }
  throw new ScenarioError(`kind: '${kind}' is not one of agent_start, agent_exec, model_call, tool_call`);
}

function emitterOptions(options: Spec): EmitterOptions {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(options)) {
    if (!Object.hasOwn(OPTIONS, name)) throw new ScenarioError(`options.${name}: not an option of the protocol`);
    out[OPTIONS[name]] = value;
  }
  return out as EmitterOptions;
}

function tlsOf(tls: Spec | null | undefined): Tls | undefined {
  if (!tls) return undefined;
  return { ca: readFileSync(tls.ca), cert: readFileSync(tls.cert), key: readFileSync(tls.key),
           serverName: tls.server_name || undefined };
}

function event(fields: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(fields) + "\n");
}

class Runner {
  private readonly targets: string[];
  private readonly tls?: Tls;
  private readonly options: EmitterOptions;
  private readonly receipts: receipts.Receipt[];
  private readonly order: Map<string, number>;
  private emitterNow?: Emitter;
  private dashboardNow?: Dashboard;

  constructor(scenario: Spec, private readonly lines: AsyncIterator<string>) {
    // One node, or the nodes of a shard separated by commas: the Emitter takes them as an array; a
    // Dashboard reads from the first.
    this.targets = String(scenario.target).split(",");
    this.tls = tlsOf(scenario.tls);
    this.options = emitterOptions(scenario.options ?? {});
    this.receipts = (scenario.receipts ?? []).map(buildReceipt);
    this.order = new Map(this.receipts.map((r, i) => [r.receipt_id, i]));
  }

  async run(steps: Spec[]): Promise<void> {
    for (const step of steps) {
      switch (step.do) {
        case "emit": await this.emit(step); break;
        case "wait": await this.wait(); break;
        case "close": await this.close(); break;
        case "watch": await this.watch(step); break;
        case "step": await this.step(step); break;
        default: throw new ScenarioError(`steps: '${step.do}' is not a step of the protocol`);
      }
    }
    this.dashboardNow?.close();
  }

  private emitter(): Emitter {
    this.emitterNow ??= new Emitter(this.targets, { ...this.options, tls: this.tls });
    return this.emitterNow;
  }

  private dashboard(): Dashboard {
    this.dashboardNow ??= new Dashboard(this.targets[0], { tls: this.tls });
    return this.dashboardNow;
  }

  private async emit(step: Spec): Promise<void> {
    const emitter = this.emitter();
    for (let index = step.from; index < step.to; index++) {
      const began = Date.now();
      try {
        await emitter.emit(this.receipts[index]);
      } catch (e) {
        if (!(e instanceof BufferFullError)) throw e;
        event({ event: "buffer_full", index, waited_ms: Date.now() - began });
        continue;
      }
      event({ event: "emitted", index });
    }
  }

  private async wait(): Promise<void> {
    event({ event: "waiting" });
    if ((await this.lines.next()).done) throw new ScenarioError("wait: standard input closed");
  }

  private async close(): Promise<void> {
    const emitter = this.emitter();
    const flushed = await emitter.close();
    const index = (id: string) => this.order.get(id) ?? this.order.size;
    const refused = [...emitter.refused].sort((a, b) => index(a.receipt_id) - index(b.receipt_id));
    const unsettled = [...emitter.unsettled].sort((a, b) => index(a.receipt_id) - index(b.receipt_id));
    event({ event: "closed", flushed, acknowledged: emitter.acknowledged, duplicates: emitter.duplicates,
            retries: emitter.retries,
            refused: refused.map((r) => ({ receipt_id: r.receipt_id, code: status[r.code], message: r.message })),
            unsettled: unsettled.map((r) => r.receipt_id) });
    this.emitterNow = undefined;
  }

  private async watch(step: Spec): Promise<void> {
    const count: number = step.count;
    if (count <= 0) return;
    let seen = 0;
    for await (const change of this.dashboard().watch(step.team, { run: step.run_id ?? undefined,
                                                                  afterSeq: step.after_seq ?? -1 })) {
      const s = change.step;
      event({ event: "change", seq: change.seq, run_id: s.run_id, step_id: s.step_id, attempt: s.attempt,
              state: stateName(s.state) });
      if (++seen === count) break;
    }
    if (seen < count) throw new ScenarioError(`watch: the ledger ended the watch after ${seen} of ${count} changes`);
  }

  private async step(step: Spec): Promise<void> {
    const s = await this.dashboard().step(step.team, step.run_id, step.step_id, step.attempt ?? 1);
    event({ event: "step", state: stateName(s.state), run_id: s.run_id, step_id: s.step_id, attempt: s.attempt });
  }
}

async function main(): Promise<number> {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();
  try {
    const first = await lines.next();
    if (first.done) throw new ScenarioError("standard input: no scenario");
    const scenario = JSON.parse(first.value);
    await new Runner(scenario, lines).run(scenario.steps ?? []);
    return 0;
  } catch (e) {
    const error = e as Error & { code?: number; details?: string };
    const message = typeof error.code === "number" && error.details !== undefined
      ? `${status[error.code]}: ${error.details}` : error.message;
    event({ event: "error", message });
    return 1;
  }
}

main().then((code) => process.exit(code));
