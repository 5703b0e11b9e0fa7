package ledger

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
)

// TLSFromFiles makes mutual-TLS credentials from PEM files: the CA that
// signed the ledger's certificate, this client's certificate and key (its
// identity, which the ledger's policy maps to teams and roles), and the
// name the ledger's certificate must carry ("" : the target's host).
func TLSFromFiles(caFile, certFile, keyFile, serverName string) (credentials.TransportCredentials, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("tls ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("tls ca: " + caFile + ": no PEM certificate in it")
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls cert and key: %w", err)
	}
	return credentials.NewTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair},
		ServerName: serverName, MinVersion: tls.VersionTLS12}), nil
}

// checkPlainText refuses plain text (no TLS) to a target that is not on
// this machine, before anything is dialed: receipts and queries would cross
// the network unauthenticated and readable. A loopback address
// (127.0.0.0/8, ::1, localhost) or a unix socket is allowed; any other only
// with insecure.
func checkPlainText(target string, tls credentials.TransportCredentials, insecure bool) error {
	if tls != nil || insecure || isLoopback(target) {
		return nil
	}
	return fmt.Errorf("address %q is not a loopback address: give TLS options (CA, certificate and key), "+
		"or ask for plain text explicitly with Insecure: true", target)
}

// isLoopback: whether target, HOST:PORT or a gRPC name ("dns:///HOST:PORT",
// "passthrough:///HOST:PORT", "unix:PATH"), stays on this machine. A name
// with a DNS authority ("dns://SERVER/HOST:PORT") does not: that server
// answers for the host.
func isLoopback(target string) bool {
	if strings.HasPrefix(target, "unix:") {
		return true
	}
	for _, scheme := range []string{"dns:///", "passthrough:///"} {
		if strings.HasPrefix(target, scheme) {
			target = target[len(scheme):]
			break
		}
	}
	host := target
	if h, _, err := net.SplitHostPort(target); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// What tlsProbe learned of a server.
const (
	speaksTLS       = "tls"        // took the handshake and waits, or sent an alert not about a client certificate
	speaksTLSClosed = "tls-closed" // closed the connection once the handshake was done: it wants a client certificate
	speaksPlain     = "plain"      // answered the TLS hello with bytes that are not TLS
)

// tlsProbe tells what the server at target (HOST:PORT) speaks, from a TLS
// handshake with it (ALPN h2, as gRPC; its certificate not checked, no
// client certificate given), within timeout: speaksTLS, speaksTLSClosed,
// speaksPlain, or "" when it cannot be reached or said nothing. For saying
// why a connection failed, never a security check.
func tlsProbe(target string, timeout time.Duration) string {
	for _, scheme := range []string{"dns:///", "passthrough:///"} {
		target = strings.TrimPrefix(target, scheme)
	}
	raw, err := net.DialTimeout("tcp", target, timeout)
	if err != nil {
		return ""
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(timeout))                                                   //nolint:errcheck // a failure shows as the handshake's
	conn := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}) //nolint:gosec
	if err := conn.Handshake(); err != nil {
		var header tls.RecordHeaderError
		switch {
		case errors.As(err, &header):
			return speaksPlain
		case strings.Contains(err.Error(), "certificate"):
			return speaksTLSClosed
		case strings.Contains(err.Error(), "remote error: tls"):
			return speaksTLS // the server answered with a TLS alert
		}
		// EOF, a reset, a timeout: a server going away, or one that said
		// nothing of what it speaks.
		return ""
	}
	// A server that took the handshake waits for the client's first bytes.
	raw.SetReadDeadline(time.Now().Add(time.Second)) //nolint:errcheck
	var b [1]byte
	if _, err := conn.Read(b[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return speaksTLS
		}
		return speaksTLSClosed
	}
	return speaksTLS
}

const howTLS = "ledger.TLSFromFiles(ca, cert, key, serverName)"

// tlsMismatch says what to give, when a request to target failed to connect
// (closed, or refused in the handshake) and a probe (tlsProbe) shows that
// the credentials, TLS (withTLS) or not, do not match what the server
// speaks; "" for any other failure.
func tlsMismatch(code codes.Code, message, target string, withTLS bool, probe func(string) string) string {
	if code != codes.Unavailable {
		return ""
	}
	closed := false
	for _, s := range []string{"connection closed", "closed network connection", "broken pipe", "connection reset",
		"EOF", "authentication handshake failed"} {
		closed = closed || strings.Contains(message, s)
	}
	if !closed {
		return ""
	}
	speaks := probe(target)
	switch {
	case !withTLS && (speaks == speaksTLS || speaks == speaksTLSClosed):
		return fmt.Sprintf("the server at %s speaks TLS: give Options.TLS (%s)", target, howTLS)
	case withTLS && speaks == speaksTLSClosed:
		return fmt.Sprintf("the server at %s closed the connection in the TLS handshake: it wants a client "+
			"certificate issued by a CA it trusts: give one in Options.TLS (%s)", target, howTLS)
	case withTLS && speaks == speaksPlain:
		return fmt.Sprintf("the server at %s speaks plain text, not TLS: leave Options.TLS nil (plain text goes "+
			"to a loopback address only, or with Options.Insecure)", target)
	}
	return ""
}
