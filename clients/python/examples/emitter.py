import os
from evidence_ledger import Emitter, receipts

emitter = Emitter(os.environ.get("LEDGER", "localhost:7420"))  # plain text on loopback; credentials for TLS
start = receipts.agent_start("team-a", "run-1", "summarize", decision="allow", timeout_ms=60_000)
emitter.emit(start)
emitter.emit(receipts.model_call("team-a", "run-1", "summarize", provider="openai", model="gpt-4o",
                                 route="default", decision="allow", input_tokens=812, output_tokens=64))
emitter.emit(receipts.agent_exec("team-a", "run-1", "summarize", start.receipt_id, status="succeeded"))
if not emitter.close():  # flushes, 30 s at most; what is not in the ledger yet stays in emitter.unsettled
    raise SystemExit("not logged: %s" % [r.receipt_id for r in emitter.unsettled])
print("logged %d receipts, %d refused" % (emitter.acknowledged, len(emitter.refused)))
