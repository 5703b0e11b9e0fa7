package ledger

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

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
