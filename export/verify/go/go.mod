module evidence-ledger/export/verify/go

go 1.19

require golang.org/x/mod v0.7.0
