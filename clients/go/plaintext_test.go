package ledger_test

// Plain text (no TLS) is dialed only to this machine unless asked for with
// Insecure (security issue 31, item 8: the clients dialed any host in plain
// text, silently).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	ledger "evidence-ledger/clients/go"
)

func refusal(target string) string {
	return fmt.Sprintf("address %q is not a loopback address: give TLS options (CA, certificate and key), "+
		"or ask for plain text explicitly with Insecure: true", target)
}

// recordingDialer is a DialOption whose dialer reports every address gRPC
// tries to reach, and reaches none.
func recordingDialer() (grpc.DialOption, chan string) {
	dialed := make(chan string, 100)
	return grpc.WithContextDialer(func(_ context.Context, address string) (net.Conn, error) {
		dialed <- address
		return nil, errors.New("the test's dialer reaches nothing")
	}), dialed
}

func TestPlainTextToAnAddressOffThisMachineIsRefusedBeforeAnythingIsDialed(t *testing.T) {
	dialer, dialed := recordingDialer()
	for _, target := range []string{"10.0.0.5:7420", "ledger:7420", "ledger.example.com:7420",
		"localhost.example.com:7420", "127.0.0.1.example.com:7420", ":7420", "[fd00::2]:7420",
		"[::ffff:10.0.0.5]:7420", "dns:///ledger:7420", "dns://8.8.8.8/localhost:7420", "ipv4:10.0.0.5:7420"} {
		e, err := ledger.NewEmitter(target, ledger.Options{DialOptions: []grpc.DialOption{dialer}})
		if err == nil || err.Error() != refusal(target) {
			t.Errorf("NewEmitter(%q): %v, want %q", target, err, refusal(target))
		}
		if e != nil {
			e.Close(context.Background()) //nolint:errcheck // nothing was emitted
		}
		d, err := ledger.NewDashboard(target, ledger.DashboardOptions{DialOptions: []grpc.DialOption{dialer}})
		if err == nil || err.Error() != refusal(target) {
			t.Errorf("NewDashboard(%q): %v, want %q", target, err, refusal(target))
		}
		if d != nil {
			d.Close()
		}
	}
	select {
	case address := <-dialed:
		t.Errorf("%s was dialed", address)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestEveryShardsAddressIsCheckedBeforeAnyShardIsDialed(t *testing.T) {
	near, err := net.Listen("tcp", "127.0.0.1:0") // shard 0, a loopback address: never dialed either
	if err != nil {
		t.Fatal(err)
	}
	defer near.Close()
	m, err := ledger.ParseShardMap([]byte(`{"version":1,"shards":[{"shard":0,"address":"` + near.Addr().String() +
		`"},{"shard":1,"address":"10.0.0.5:7420"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := "shard 1: " + refusal("10.0.0.5:7420")
	if s, err := ledger.NewShardedEmitter(m, ledger.Options{}); err == nil || err.Error() != want {
		t.Errorf("NewShardedEmitter: %v, want %q", err, want)
		if s != nil {
			s.Close(context.Background()) //nolint:errcheck // nothing was emitted
		}
	}
	if s, err := ledger.NewShardedDashboard(m, ledger.DashboardOptions{}); err == nil || err.Error() != want {
		t.Errorf("NewShardedDashboard: %v, want %q", err, want)
		if s != nil {
			s.Close()
		}
	}
	near.(*net.TCPListener).SetDeadline(time.Now().Add(200 * time.Millisecond)) //nolint:errcheck
	if conn, err := near.Accept(); err == nil {
		conn.Close()
		t.Error("shard 0 was dialed")
	}
}

func TestPlainTextToLoopbackOrAUnixSocketAndTLSToAnyAddressAreDialedAsBefore(t *testing.T) {
	for _, target := range []string{"localhost:7420", "LocalHost:7420", "127.0.0.1:7420", "127.1.2.3:7420",
		"[::1]:7420", "::1", "127.0.0.1", "dns:///localhost:7420", "passthrough:///127.0.0.1:7420",
		"unix:/run/ledger.sock", "unix:///run/ledger.sock"} {
		e, err := ledger.NewEmitter(target, ledger.Options{Logger: (&quiet{}).Logger()})
		if err != nil {
			t.Errorf("NewEmitter(%q): %v", target, err)
		} else {
			e.Close(context.Background()) //nolint:errcheck // nothing was emitted
		}
		d, err := ledger.NewDashboard(target, ledger.DashboardOptions{})
		if err != nil {
			t.Errorf("NewDashboard(%q): %v", target, err)
		} else {
			d.Close()
		}
	}
	creds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	if e, err := ledger.NewEmitter("10.0.0.5:7420", ledger.Options{TLS: creds}); err != nil {
		t.Errorf("NewEmitter with TLS: %v", err)
	} else {
		e.Close(context.Background()) //nolint:errcheck // nothing was emitted
	}
}

// nonLoopbackIPv4 is an address of this machine off loopback, "" if it has
// none.
func nonLoopbackIPv4(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

func TestInsecureDialsPlainTextToAnAddressOffLoopback(t *testing.T) {
	host := nonLoopbackIPv4(t)
	if host == "" {
		// No such address here: Insecure at least gets past the refusal to a
		// connection that fails (TEST-NET-3 answers nobody).
		target := "203.0.113.1:7420"
		d, err := ledger.NewDashboard(target, ledger.DashboardOptions{Insecure: true, Timeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatalf("NewDashboard with Insecure: %v", err)
		}
		defer d.Close()
		_, err = d.Steps(context.Background(), ledger.StepQuery{Team: "team-a"}, 1)
		if c := status.Code(err); c != codes.Unavailable && c != codes.DeadlineExceeded {
			t.Fatalf("Steps: %v, want UNAVAILABLE or DEADLINE_EXCEEDED", err)
		}
		return
	}
	l := startLedgerOn(t, host, "--insecure")
	if _, err := ledger.NewEmitter(l.Address, ledger.Options{}); err == nil || err.Error() != refusal(l.Address) {
		t.Fatalf("NewEmitter without Insecure: %v, want %q", err, refusal(l.Address))
	}
	e := newEmitter(t, l.Address, ledger.Options{Insecure: true})
	emitAll(t, e, calls(t, 2, "insecure"))
	if err := e.Close(context.Background()); err != nil || e.Stats().Acknowledged != 2 {
		t.Fatalf("Close: %v, %+v", err, e.Stats())
	}
	if got := l.ReceiptIDs(); !equal(got, ids("insecure", 2)) {
		t.Fatalf("the log at %s holds %v", l.Address, got)
	}
	d, err := ledger.NewDashboard(l.Address, ledger.DashboardOptions{Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if runs, err := runsOnceProjected(d, "team-a"); err != nil || len(runs) != 1 {
		t.Fatalf("team-a's runs at %s: %v %v", l.Address, runs, err)
	}
	m, err := ledger.ParseShardMap([]byte(`{"version":1,"shards":[{"shard":0,"address":"` + l.Address + `"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ledger.NewShardedEmitter(m, ledger.Options{Insecure: true, Logger: (&quiet{}).Logger()})
	if err != nil {
		t.Fatalf("NewShardedEmitter with Insecure: %v", err)
	}
	s.Close(context.Background()) //nolint:errcheck // nothing was emitted
}
