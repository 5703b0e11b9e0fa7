module evidence-ledger/clients/go

go 1.19

require (
	golang.org/x/mod v0.7.0
	google.golang.org/grpc v1.33.3
	google.golang.org/protobuf v1.28.1
)
