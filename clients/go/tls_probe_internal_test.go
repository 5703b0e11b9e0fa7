package ledger

import (
	"net"
	"testing"
	"time"
)

// A server that takes the connection and resets it in the handshake (one
// going down, as a killed ledgerd's port does) says nothing of what it
// speaks: the probe answers "", never "speaks TLS", so that a restart is
// retried and not called a configuration error.
func TestAProbeResetInTheHandshakeIsNoAnswer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 1)
			c.Read(buf)                   //nolint:errcheck // the client's hello begins
			c.(*net.TCPConn).SetLinger(0) //nolint:errcheck // close with a reset
			c.Close()
		}
	}()
	if got := tlsProbe(l.Addr().String(), 2*time.Second); got != "" {
		t.Errorf("tlsProbe of a server that resets the handshake = %q, want \"\"", got)
	}
}
