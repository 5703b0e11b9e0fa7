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
//
// Without TLS (Options.TLS, DashboardOptions.TLS: see TLSFromFiles) a
// client dials plain text only to a loopback address (127.0.0.0/8, ::1,
// localhost) or a unix socket. Any other target, or any shard's address in
// a ShardMap, is refused before anything is dialed:
//
//	address "10.0.0.5:7420" is not a loopback address: give TLS options (CA, certificate and key), or ask for plain text explicitly with Insecure: true
//
// Insecure: true in the options is that explicit request.
package ledger
