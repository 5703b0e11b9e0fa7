// Package ledger is the Go client of the evidence ledger.
//
//	emitter, err := ledger.NewEmitter("ledger:7420", ledger.Options{})
//	r, err := ledger.ModelCall(ledger.Base{Team: "team-a", RunID: "r1", StepID: "s1"},
//		ledger.ModelCallFields{Model: "gpt-4o", Decision: ledger.Allow})
//	err = emitter.Emit(ctx, r)
//	err = emitter.Close(ctx) // flushes; an *UnsettledError names what it could not settle
//
// An Emitter sends receipts in batches from a goroutine and retries with
// the same receipt_id until the ledger has them; a Dashboard reads step
// outcomes and watches their changes; VerifyCheckpoint, VerifyInclusion
// and VerifyConsistency check a pack's checkpoint and proofs offline
// (CONTRACT.md sections 5 to 7). The gRPC stubs are in ledgerpb.
package ledger
