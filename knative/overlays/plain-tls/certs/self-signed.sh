#!/usr/bin/env bash
# Makes the three files overlays/plain-tls needs, with openssl (1.1.1 or later), in this directory:
#   ca.crt + ca.key   a private CA (10 years) that only vmpool's two API registrations trust
#   tls.crt + tls.key a serving certificate (1 year) for the ServerNames the API server verifies:
#                     scale-validate.vmpool-system.svc (webhook), scale-down-with.vmpool-system.svc
#                     (APIService)
# Bring your own instead if you have a PKI: any CA, any key type, these DNS names.
# ca.key is not applied (only ca.crt, tls.crt and tls.key are); move it somewhere safe, you need it
# only to issue the next tls.crt. Run it again with --renew to issue a new tls.crt from the same CA
# (the caBundles stay valid), without --renew it refuses to overwrite existing files.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

renew=false
case "${1:-}" in
  --renew) renew=true ;;
  "") ;;
  *) echo "usage: $0 [--renew]" >&2; exit 2 ;;
esac

names="DNS:scale-validate.vmpool-system.svc,DNS:scale-validate.vmpool-system.svc.cluster.local"
names+=",DNS:scale-down-with.vmpool-system.svc,DNS:scale-down-with.vmpool-system.svc.cluster.local"

if [ "$renew" = false ]; then
  for f in ca.crt ca.key tls.crt tls.key; do
    if [ -e "$f" ]; then
      echo "$f exists: refusing to overwrite (use --renew for a new tls.crt from the same CA)" >&2
      exit 1
    fi
  done
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=vmpool-ca" -keyout ca.key -out ca.crt \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
elif [ ! -e ca.crt ] || [ ! -e ca.key ]; then
  echo "--renew needs ca.crt and ca.key here" >&2
  exit 1
fi

openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -subj "/CN=scale-validate.vmpool-system.svc" -keyout tls.key -out tls.csr
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 -out tls.crt \
  -extfile <(printf '%s\n' "subjectAltName=$names" "basicConstraints=CA:FALSE" \
    "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth")
rm -f tls.csr ca.srl
chmod 600 ca.key tls.key
written="tls.crt, tls.key"
[ "$renew" = true ] || written="ca.crt, ca.key, $written"
echo "wrote $written in $(pwd); tls.crt expires $(openssl x509 -enddate -noout -in tls.crt | cut -d= -f2)"
echo "move ca.key somewhere safe: it is not applied, and needed only for the next --renew"
