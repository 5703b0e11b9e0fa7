import { Emitter, receipts } from "evidence-ledger";

async function main(): Promise<void> {
  const emitter = new Emitter(process.env.LEDGER ?? "localhost:7420");  // plain text on loopback; { tls } for TLS
  const start = receipts.agentStart("team-a", "run-1", "summarize", { decision: "allow", timeout_ms: 60_000 });
  await emitter.emit(start);
  await emitter.emit(receipts.modelCall("team-a", "run-1", "summarize", { provider: "openai", model: "gpt-4o",
    route: "default", decision: "allow", input_tokens: 812, output_tokens: 64 }));
  await emitter.emit(receipts.agentExec("team-a", "run-1", "summarize", start.receipt_id, { status: "succeeded" }));
  if (!(await emitter.close())) {  // flushes, 30 s at most; what is not in the ledger yet stays in emitter.unsettled
    throw new Error(`not logged: ${emitter.unsettled.map((r) => r.receipt_id).join(", ")}`);
  }
  console.log(`logged ${emitter.acknowledged} receipts, ${emitter.refused.length} refused`);
}

main();
