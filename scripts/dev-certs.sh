#!/bin/sh
# Development certificates for trying the ledger with mutual TLS: a CA, a
# server certificate for localhost and 127.0.0.1, and client certificates
# whose identities are URI SANs (spiffe://dev/<name>), each signed by the CA,
# with the openssl command line (P-256 keys, valid 30 days). Not for
# production: the CA's key lies beside its certificate.
#
# Usage: scripts/dev-certs.sh DIR [CLIENT...]   (default clients: gateway auditor admin)
# SERVER_SAN, when set, is the server certificate's subjectAltName instead
# of DNS:localhost,IP:127.0.0.1 (deploy/local-tls.sh names a cluster's).
#
# Writes DIR/ca.pem, DIR/ca.key, DIR/server.pem, DIR/server.key and, for each
# client, DIR/<client>.pem and DIR/<client>.key, and DIR/policy.json giving
# gateway the emitter role for team-a, auditor the auditor role for every
# team and admin the admin role (the other clients get no rule). Then:
#   ledgerd --data data --tls-cert DIR/server.pem --tls-key DIR/server.key \
#           --client-ca DIR/ca.pem --policy DIR/policy.json
# Existing files are kept: run it again to add clients.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 DIR [CLIENT...]" >&2; exit 2; }
dir=$1
shift
[ $# -gt 0 ] || set -- gateway auditor admin
mkdir -p "$dir"
cd "$dir"
umask 077
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
if [ ! -f ca.pem ]; then
  key ca.key
  openssl req -x509 -new -key ca.key -out ca.pem -days 30 -subj "/CN=evidence-ledger dev CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
fi
issue() {  # issue NAME SUBJECT SAN
  [ -f "$1.pem" ] && return 0
  key "$1.key"
  openssl req -new -key "$1.key" -subj "$2" -addext "subjectAltName=$3" -out "$1.csr" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 -copy_extensions copy \
    -out "$1.pem" 2>/dev/null
  rm -f "$1.csr"
}
issue server "/CN=localhost" "${SERVER_SAN:-DNS:localhost,IP:127.0.0.1}"
for client in "$@"; do
  issue "$client" "/CN=$client" "URI:spiffe://dev/$client"
done
if [ ! -f policy.json ]; then
  cat > policy.json <<'JSON'
{"identities": [
  {"identity": "uri:spiffe://dev/gateway", "roles": ["emitter"], "teams": ["team-a"]},
  {"identity": "uri:spiffe://dev/auditor", "roles": ["auditor"], "teams": ["*"]},
  {"identity": "uri:spiffe://dev/admin", "roles": ["admin"]}]}
JSON
fi
chmod 644 ca.pem server.pem ./*.pem policy.json
echo "certificates in $dir: ca.pem, server.pem/.key, $(printf '%s.pem/.key ' "$@")and policy.json"
