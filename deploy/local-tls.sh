#!/bin/sh
# TLS for the local overlay (deploy/kustomize/overlays/local), made by
# scripts/dev-certs.sh with openssl: a CA, the server certificate of the
# overlay's shard and Services, and the client certificates whose
# identities the overlay's policy.json names (spiffe://dev/gateway, an
# emitter for team-a; spiffe://dev/auditor, an auditor of every team, who
# may also read /metrics; spiffe://dev/admin). P-256 keys, valid 30 days,
# the CA's key beside its certificate: for kind or minikube, never for
# production. Prints the commands that make them the Secret ledger-tls and
# apply the overlay.
#
# Usage: deploy/local-tls.sh DIR   (a new directory: an existing server.pem
#                                   might name other hosts)
set -eu
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1
[ ! -e "$dir/server.pem" ] || { echo "$0: $dir/server.pem exists; give a new directory" >&2; exit 1; }
ns=evidence-ledger-local
# The shard by the shard map's name, the Services (the ServiceMonitor's
# serverName is `ledger`), and loopback for kubectl port-forward.
SERVER_SAN="DNS:ledger-0.ledger-headless.$ns,DNS:ledger-0.ledger-headless.$ns.svc,DNS:ledger-0.ledger-headless"
SERVER_SAN="$SERVER_SAN,DNS:ledger.$ns,DNS:ledger.$ns.svc,DNS:ledger,DNS:localhost,IP:127.0.0.1"
export SERVER_SAN
"$(dirname "$0")/../scripts/dev-certs.sh" "$dir" gateway auditor admin > /dev/null
cat <<TEXT
certificates in $dir: ca.pem, server.pem/.key ($SERVER_SAN), gateway, auditor and admin .pem/.key
kubectl create namespace $ns
kubectl -n $ns create secret generic ledger-tls --from-file=tls.crt=$dir/server.pem \\
  --from-file=tls.key=$dir/server.key --from-file=ca.crt=$dir/ca.pem
kubectl apply -k deploy/kustomize/overlays/local
kubectl -n $ns port-forward pod/ledger-0 7420:7420 7421:7421
ledgerctl --server 127.0.0.1:7420 --tls-ca $dir/ca.pem --cert $dir/admin.pem --key $dir/admin.key checkpoint
TEXT
