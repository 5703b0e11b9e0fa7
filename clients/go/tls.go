package ledger

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

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
