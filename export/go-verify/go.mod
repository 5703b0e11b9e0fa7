module evidence-ledger/export/go-verify

go 1.19

require golang.org/x/mod v0.7.0
