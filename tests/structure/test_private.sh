#!/usr/bin/env bash
# The build's own fence (issue 18), and the headers as contracts: the targets see only the public header tree (build/include, links to every
# module header but its private *_int.h), so another module's private header does not compile, by path or by
# its short name, while a public header does and a private one compiles inside its own folder; and each public
# header compiles as the only include of a file (it is a contract that stands alone). Compiles
# three one-line files with the build's compiler and the targets' include directory; no root, no network.
# Usage: test_private.sh CC PUBLIC_INCLUDE_DIR SOURCE_ROOT
set -uo pipefail
cc=$1 inc=$2 root=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
try() {  # try <expect: ok|refused> <dir under the source root, as the including file's folder> <include line>
	local want=$1 dir=$2 line=$3 f rc
	f="$root/$dir/.private_check_$$.c"
	printf '%s\nint private_check_dummy;\n' "$line" >"$f"
	"$cc" -fsyntax-only -std=c11 -I"$inc" $(pkg-config --cflags libevent jansson libnghttp2 2>/dev/null) "$f" \
	    >"$tmp/out" 2>&1
	rc=$?
	rm -f "$f"
	if [ "$want" = ok ] && [ "$rc" -ne 0 ]; then
		echo "FAIL: $dir: $line does not compile: $(head -1 "$tmp/out")"; fail=1
	elif [ "$want" = refused ] && [ "$rc" -eq 0 ]; then
		echo "FAIL: $dir: $line compiles (another module's private header is reachable)"; fail=1
	fi
}
try ok proxy/session '#include "proxy/judge/semantic.h"'
try refused proxy/session '#include "proxy/judge/semantic_int.h"'
try refused proxy/session '#include "semantic_int.h"'
try refused proxy/net '#include "policy/policy_int.h"'
try ok proxy/judge '#include "semantic_int.h"'
try ok policy '#include "policy_int.h"'
[ -d "$inc/proxy/core" ] || { echo "FAIL: $inc has no public header tree"; fail=1; }
# and every public header is a contract that stands alone: it compiles as the only include of a file
n=0
while IFS= read -r h; do
	n=$((n + 1))
	printf '#include "%s"\n' "$h" >"$tmp/alone.c"
	"$cc" -fsyntax-only -std=c11 -Wall -Werror -I"$inc" $(pkg-config --cflags libevent jansson libnghttp2 hiredis \
	    2>/dev/null) "$tmp/alone.c" >"$tmp/out" 2>&1 ||
		{ echo "FAIL: $h does not compile alone: $(grep -m1 error "$tmp/out")"; fail=1; }
done < <(cd "$inc" && find . -name '*.h' | sed 's|^\./||' | sort)
[ "$n" -gt 50 ] || { echo "FAIL: only $n public headers found under $inc"; fail=1; }
[ "$fail" -eq 0 ] && echo "private headers reachable only from their own folder (6 checks); $n public headers compile alone"
exit "$fail"
