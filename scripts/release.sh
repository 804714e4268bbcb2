#!/usr/bin/env bash
# Builds the release binary: static (CGO_ENABLED=0, as the Dockerfile),
# without symbol table and DWARF (-ldflags '-s -w'), without the build
# machine's paths (-trimpath), and stamped with a version that
# `eventlogging version` prints:
#
#   scripts/release.sh [-o OUT] [VERSION]
#
#   VERSION   default: `git describe --tags --always --dirty`, else "dev"
#   -o OUT    default: eventlogging in the repository root (ignored by git)
#
# GOOS and GOARCH are passed through, so GOOS=linux GOARCH=arm64
# scripts/release.sh cross-compiles. The VCS commit and time are stamped
# too when the tree is a git checkout (-buildvcs=auto, overriding a
# GOFLAGS=-buildvcs=false). From an empty build cache about 330 CPU-seconds
# (over 2.7 minutes on 2 cores; -trimpath and CGO_ENABLED=0 miss the cache
# an ordinary `go build` filled), seconds with a warm one; the binary is
# about 70 % of an ordinary build's (docs/performance.md, "Build and
# binary"; scripts/binsize.sh shows which modules make it big).
set -euo pipefail

out=
while getopts o:h opt; do
	case $opt in
	o) out=$OPTARG ;;
	*) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
case $out in
"") ;;
/*) ;;
*) out=$PWD/$out ;; # relative to where the script was called from
esac
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${out:-$PWD/eventlogging}
version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}

CGO_ENABLED=0 go build -trimpath -buildvcs=auto \
	-ldflags "-s -w -X main.version=$version" \
	-o "$out" ./cmd/eventlogging

size=$(wc -c <"$out")
echo "$out: $((size / 1024 / 1024)) MiB ($size bytes)"
if [[ "$(go env GOOS)/$(go env GOARCH)" == "$(go env GOHOSTOS)/$(go env GOHOSTARCH)" ]]; then
	"$out" version
fi
