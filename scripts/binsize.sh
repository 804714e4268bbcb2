#!/usr/bin/env bash
# Which modules make the binary big: the sizes of an unstripped binary's
# symbols (`go tool nm -size`), summed by module, largest first. A symbol
# counts for the module path (of `go version -m`) found first in its name,
# the longest one there, so type, itab, closure and generic-instance
# symbols count for the package they name:
#
#   scripts/binsize.sh [BINARY] [N]    default: builds ./cmd/eventlogging
#                                      into a temporary file; N default 10
#
# Counted: code, read-only and initialised data, the bytes a symbol
# takes in the file; not the zeroed data (.bss, .noptrbss: no bytes in the
# file). "std" is the standard library and the runtime, including the
# runtime's tables of all functions and types (go:func.*, typelinks). The
# file holds more than the symbols: the function table (.gopclntab), the
# symbol table and DWARF, none of it charged to a module, though the first
# grows with the code. A stripped binary has no symbols: give this one a
# binary built without -ldflags '-s -w'.
set -euo pipefail

bin=${1:-}
n=${2:-10}
case $bin in
"" | /*) ;;
*) bin=$PWD/$bin ;;
esac
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -z $bin ]]; then
	bin=$tmp/eventlogging
	go build -o "$bin" ./cmd/eventlogging
fi

# The module paths (main module, dependencies, replacements), then the
# symbols: "bytes<TAB>module" per module and the total, largest first.
go version -m "$bin" | awk '$1 == "mod" || $1 == "dep" || $1 == "=>" { print $2 }' >"$tmp/modules"
go tool nm -size "$bin" >"$tmp/symbols"
go tool nm "$bin" | awk '$3 == "runtime.bss" { print "bss", $1 } $3 == "runtime.enoptrbss" { print "end", $1 }' >"$tmp/bss"
awk '
function hex(a) { return substr("0000000000000000", 1, 16 - length(a)) a }
FILENAME ~ /bss$/ { bss[$1] = hex($2); next }
FILENAME ~ /modules$/ { mods[++nm] = $0; next }
NF < 4 || $3 == "U" { next }
bss["bss"] != "" && hex($1) >= bss["bss"] && hex($1) < bss["end"] { next }
{
	name = $4
	for (i = 5; i <= NF; i++) name = name " " $i
	best = ""; bestpos = 0
	for (i = 1; i <= nm; i++) {
		m = mods[i]
		p = index(name, m)
		if (p == 0) continue
		after = substr(name, p + length(m), 1)
		if (after != "" && after != "." && after != "/") continue
		if (p > 1 && substr(name, p - 1, 1) ~ /[A-Za-z0-9.-]/) continue
		if (best == "" || p < bestpos || (p == bestpos && length(m) > length(best))) { best = m; bestpos = p }
	}
	if (best == "") best = "std"
	bytes[best] += $2
	total += $2
}
END {
	for (m in bytes) printf "%d\t%s\n", bytes[m], m
	printf "%d\t(all symbols)\n", total
}' "$tmp/bss" "$tmp/modules" "$tmp/symbols" | sort -rn | awk -v n="$n" -F '\t' '
NR == 1 { total = $1; next }
{ sum[++r] = $1; name[r] = $2 }
END {
	printf "%-46s %8s %6s\n", "module", "MiB", "share"
	for (i = 1; i <= r && i <= n; i++)
		printf "%-46s %8.1f %5.1f%%\n", name[i], sum[i] / 1048576, 100 * sum[i] / total
	for (i = n + 1; i <= r; i++) rest += sum[i]
	printf "%-46s %8.1f %5.1f%%\n", "(" (r > n ? r - n : 0) " other modules)", rest / 1048576, 100 * rest / total
	printf "%-46s %8.1f\n", "all symbols", total / 1048576
}'
