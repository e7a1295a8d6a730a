#!/usr/bin/env bash
# Builds the real control plane (etcd, kube-apiserver, kube-controller-manager, kubectl) and the
# Knative ApiServerSource receive adapter from the Go module proxy, and caches the binaries outside
# the repository, keyed by the module files, so a second run (and a fresh clone) is a no-op.
#
#   local/controlplane/build.sh [k8s|knative|all]     (default: all)
#
# Cache root: $VMPOOL_CACHE_DIR, else $XDG_CACHE_HOME/vmpool, else ~/.cache/vmpool.
# Prints the bin directory of each part on stdout as "<part>=<dir>".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${VMPOOL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vmpool}
what=${1:-all}

log() { printf '[build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# key: module name + hash of go.mod and go.sum, so any version change rebuilds.
key_of() { cat "$1/go.mod" "$1/go.sum" | sha256sum | cut -c1-16; }

build_part() {
  local part=$1 mod="$here/$1"
  local key; key=$(key_of "$mod")
  local out="$cache_root/$part-$key"
  if [ -f "$out/.complete" ]; then
    log "$part: cached in $out"
    echo "$part=$out/bin"
    return 0
  fi
  local version ldflags=""
  if [ "$part" = k8s ]; then
    version=$(awk '$1=="k8s.io/kubernetes"{print $2} $1=="require" && $2=="k8s.io/kubernetes"{print $3}' "$mod/go.mod" | head -1)
    local minor; minor=$(echo "$version" | cut -d. -f2)
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags+=" -X $p.gitVersion=$version -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
    done
  fi
  local tmp="$out.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp/bin"
  log "$part: downloading modules (first build only)"
  (cd "$mod" && go mod download)
  local tools; tools=$(cd "$mod" && go list -f '{{range .Tool}}{{.}} {{end}}' -m 2>/dev/null || true)
  [ -n "$tools" ] || tools=$(awk '/^tool \(/{f=1;next} f&&/^\)/{f=0} f{print $1} /^tool [^(]/{print $2}' "$mod/go.mod")
  local n=0 total; total=$(echo $tools | wc -w)
  local start=$SECONDS
  for t in $tools; do
    n=$((n+1))
    local name; name=$(basename "$t")
    case "$t" in go.etcd.io/etcd/server/v3) name=etcd ;; esac
    log "$part: [$n/$total] compiling $name (cold builds take minutes on 2 cores)"
    local t0=$SECONDS
    (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w$ldflags" -o "$tmp/bin/$name" "$t")
    log "$part: [$n/$total] $name done in $((SECONDS-t0))s ($(du -h "$tmp/bin/$name" | cut -f1))"
    # Kept for the next build's estimates (npm start shows how long is left).
    printf '%s\t%s\n' "$name" "$((SECONDS-t0))" >> "$cache_root/build-seconds.tsv"
  done
  date -u +%FT%TZ > "$tmp/.complete"
  rm -rf "$out"; mv "$tmp" "$out"
  log "$part: built in $((SECONDS-start))s into $out"
  echo "$part=$out/bin"
}

case "$what" in
  k8s|knative) build_part "$what" ;;
  all) build_part k8s; build_part knative ;;
  *) echo "usage: $0 [k8s|knative|all]" >&2; exit 2 ;;
esac
