package main

import (
	"context"
	"fmt"
	"log"
	"os"

	ledger "evidence-ledger/clients/go"
)

func main() {
	ctx := context.Background()
	emitter, err := ledger.NewEmitter(os.Getenv("LEDGER"), ledger.Options{}) // plain text on loopback; Options.TLS for mTLS
	if err != nil {
		log.Fatal(err)
	}
	step := ledger.Base{Team: "team-a", RunID: "run-1", StepID: "summarize"}
	start, _ := ledger.AgentStart(step, ledger.AgentStartFields{Decision: ledger.Allow, TimeoutMs: ledger.Int64(60_000)})
	call, _ := ledger.ModelCall(step, ledger.ModelCallFields{Provider: "openai", Model: "gpt-4o", Route: "default",
		Decision: ledger.Allow, InputTokens: ledger.Int64(812), OutputTokens: ledger.Int64(64)})
	end, _ := ledger.AgentExec(step, ledger.AgentExecFields{StartReceiptID: start.ReceiptId, Status: ledger.Succeeded})
	for _, r := range []*ledger.Receipt{start, call, end} {
		if err := emitter.Emit(ctx, r); err != nil { // ErrBufferFull after EmitTimeout
			log.Fatal(err)
		}
	}
	if err := emitter.Close(ctx); err != nil { // flushes, 30 s at most; an *UnsettledError holds what is not logged
		log.Fatal(err)
	}
	fmt.Printf("logged %d receipts, %d refused\n", emitter.Stats().Acknowledged, len(emitter.Refused()))
}
