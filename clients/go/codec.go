package ledger

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// protoCodec marshals with google.golang.org/protobuf, the runtime the
// stubs are generated for. gRPC's own "proto" codec goes through
// github.com/golang/protobuf, which Debian may install at version 1.3:
// that version cannot marshal these messages (a oneof makes it panic).
type protoCodec struct{}

func (protoCodec) Name() string { return "proto" }

func (protoCodec) Marshal(v interface{}) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("proto codec: %T is not a protobuf message", v)
	}
	return proto.Marshal(m)
}

func (protoCodec) Unmarshal(data []byte, v interface{}) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("proto codec: %T is not a protobuf message", v)
	}
	return proto.Unmarshal(data, m)
}

// CodecOption makes a connection's calls use the codec above; the Emitter
// and Dashboard dial with it. Give it to grpc.Dial when calling the stubs
// of ledgerpb directly.
func CodecOption() grpc.DialOption {
	return grpc.WithDefaultCallOptions(grpc.ForceCodec(protoCodec{}))
}
