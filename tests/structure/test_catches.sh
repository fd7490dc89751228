#!/usr/bin/env bash
# scripts/layer_check.py can fail: run on tests/structure/bad (a tiny tree whose files marked BAD break the
# layer order on purpose), it must exit 1 and report exactly those (and nothing marked good): an include up a
# layer (common into policy, net into the session), a cycle inside one layer (net <-> dns), a module with
# no declared layer, another module's private header (*_int.h), and an allowed edge that no longer occurs.
set -uo pipefail
here=$(dirname "$(readlink -f "$0")")
root=$(readlink -f "$here/../..")
out=$(/usr/bin/python3 "$root/scripts/layer_check.py" --root "$here/bad" --allow "$here/bad/allow.txt" 2>&1)
rc=$?
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ "$rc" -eq 1 ] || bad "layer_check exited $rc on the bad tree, not 1"
expected='proxy/gadget/gadget.c: module proxy/gadget has no declared layer
common/up.c: #include "policy/p.h": common (layer 0) includes policy (layer 2)
proxy/net/deadline.c: #include "proxy/session/session.h": proxy/net (layer 6) includes proxy/session (layer 9)
cycle between modules: proxy/dns <-> proxy/net
allowed edge proxy/cred -> proxy/session no longer occurs
proxy/session/peek.c: includes proxy/net/pool_int.h, a private header of proxy/net'
while IFS= read -r e; do
	grep -qF -- "$e" <<<"$out" || bad "not reported: $e"
done <<<"$expected"
n=$(grep -c '^layer_check: ' <<<"$out")
[ "$n" -eq 6 ] || bad "$n problems reported, expected 6 (something marked good was reported)"
# and the good tree passes: the same bad tree with the BAD files left out
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$here/bad/." "$tmp/"
rm -r "$tmp/proxy/session/peek.c" "$tmp/common/up.c" "$tmp/proxy/net/deadline.c" "$tmp/proxy/net/resolve.c" "$tmp/proxy/gadget"
: >"$tmp/allow.txt"
good=$(/usr/bin/python3 "$root/scripts/layer_check.py" --root "$tmp" --allow "$tmp/allow.txt" 2>&1) ||
	bad "layer_check failed on the good part of the tree: $good"
[ "$fail" -eq 0 ] && echo "layer_check catches all 6 planted problems and passes the good tree"
exit "$fail"
