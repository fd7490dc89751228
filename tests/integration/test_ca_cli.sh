#!/usr/bin/env bash
# CLI: ca init/show (key mode, overwrite refusal, --force, fingerprint), --help and usage exit codes,
# policy check (ok, and file:line:col errors with exit 1), version.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
S=$SLUICE D=$T/cadir

# ca init
out=$(timeout 20 "$S" ca init --dir "$D" 2>&1); rc=$?
check_eq "ca init exits 0" 0 "$rc"
check "ca init made ca.pem and ca.key" test -s "$D/ca.pem" -a -s "$D/ca.key"
check_eq "ca.key is mode 0600" 600 "$(stat -c %a "$D/ca.key")"
check_eq "ca.key is owned by root" 0 "$(stat -c %u "$D/ca.key")"
txt=$(openssl x509 -in "$D/ca.pem" -noout -text 2>&1)
check_match "ca is a CA (basicConstraints CA:TRUE, critical)" 'X509v3 Basic Constraints: critical' "$txt"
check_match "ca has CA:TRUE" 'CA:TRUE' "$txt"
check_match "ca key is ECDSA P-256" 'NIST CURVE: P-256|prime256v1' "$txt"
check_match "ca can sign certificates (keyCertSign)" 'Certificate Sign' "$txt"
check "ca.key matches ca.pem" sh -c "[ \"\$(openssl pkey -in '$D/ca.key' -pubout 2>/dev/null)\" = \"\$(openssl x509 -in '$D/ca.pem' -noout -pubkey)\" ]"
sum1=$(sha256sum <"$D/ca.pem")

# refuses overwrite, --force replaces
out=$(timeout 20 "$S" ca init --dir "$D" 2>&1); rc=$?
check_eq "ca init over an existing CA exits 1" 1 "$rc"
check_match "the refusal says --force" 'force' "$out"
check_eq "the refused init left ca.pem unchanged" "$sum1" "$(sha256sum <"$D/ca.pem")"
out=$(timeout 20 "$S" ca init --dir "$D" --force 2>&1); rc=$?
check_eq "ca init --force exits 0" 0 "$rc"
check "ca init --force replaced the CA" test "$sum1" != "$(sha256sum <"$D/ca.pem")"
check_eq "ca.key is still 0600 after --force" 600 "$(stat -c %a "$D/ca.key")"

# --if-missing (the packaged unit's first start): keeps a complete CA, makes a missing one, refuses half of one
sum2=$(sha256sum <"$D/ca.pem"); ksum=$(sha256sum <"$D/ca.key")
out=$(timeout 20 "$S" ca init --dir "$D" --if-missing 2>&1); rc=$?
check_eq "ca init --if-missing over a CA exits 0" 0 "$rc"
check_match "it says the CA was kept" '^kept the CA in' "$out"
check_eq "--if-missing left ca.pem unchanged" "$sum2" "$(sha256sum <"$D/ca.pem")"
check_eq "--if-missing left ca.key unchanged" "$ksum" "$(sha256sum <"$D/ca.key")"
out=$(timeout 20 "$S" ca init --dir "$T/freshca" --if-missing 2>&1); rc=$?
check_eq "ca init --if-missing without a CA exits 0" 0 "$rc"
check "... and made one" test -s "$T/freshca/ca.pem" -a -s "$T/freshca/ca.key"
mv "$D/ca.key" "$T/ca.key.away"
out=$(timeout 20 "$S" ca init --dir "$D" --if-missing 2>&1); rc=$?
check_eq "ca init --if-missing with ca.key gone exits 1" 1 "$rc"
check_match "... saying the CA is incomplete" 'incomplete' "$out"
check "... and wrote no new ca.key" test ! -e "$D/ca.key"
check_eq "... nor a new ca.pem" "$sum2" "$(sha256sum <"$D/ca.pem")"
mv "$T/ca.key.away" "$D/ca.key"
out=$(timeout 20 "$S" ca init --dir "$D" --if-missing --force 2>&1); rc=$?
check_eq "--if-missing with --force is a usage error (2)" 2 "$rc"

# ca show
out=$(timeout 20 "$S" ca show --dir "$D" 2>&1); rc=$?
check_eq "ca show exits 0" 0 "$rc"
fp=$(openssl x509 -in "$D/ca.pem" -noout -fingerprint -sha256 | cut -d= -f2)
got=$(printf '%s\n' "$out" | sed -n 's/^fingerprint: SHA256 //p')
check_eq "ca show fingerprint equals openssl's" "$fp" "$got"
check_match "ca show prints the PEM path to trust" "trust this: $(readlink -f "$D")/ca.pem" "$out"
check_match "ca show prints validity" 'not after' "$out"
out=$(timeout 20 "$S" ca show --dir "$T/nothing" 2>&1); rc=$?
check_eq "ca show on a missing CA exits 1" 1 "$rc"

# --help exits 0 and prints usage, for every command
for c in "ca init" "ca show" "serve" "policy check" "version" "ca" "policy"; do
  # shellcheck disable=SC2086
  out=$(timeout 10 "$S" $c --help 2>&1); rc=$?
  check_eq "sluice $c --help exits 0" 0 "$rc"
  check_match "sluice $c --help prints usage" 'usage' "$out"
done
out=$(timeout 10 "$S" --help 2>&1); rc=$?
check_eq "sluice --help exits 0" 0 "$rc"

# bad usage exits 2
while IFS= read -r c; do
  # shellcheck disable=SC2086
  timeout 10 "$S" $c >/dev/null 2>&1; rc=$?
  check_eq "bad usage '$c' exits 2" 2 "$rc"
done <<'LIST'
bogus
ca
ca init
ca frobnicate
ca init --dir
ca init --dir /tmp/x --bogus
ca show
serve
serve -c
serve --bogus
policy
policy check
policy check a b
version extra
LIST
timeout 10 "$S" >/dev/null 2>&1; rc=$?
check_eq "no command exits 2" 2 "$rc"

# policy check
cat >"$T/good.yaml" <<Y
listen:
  proxy: "127.0.0.1:3128"
user: root
ca: $D
default: deny
hosts:
  api.example.test:
    rules:
      - allow: { method: GET, path: "/ok/**" }
      - deny: { method: [PUT, DELETE], path: "regex:/x/[0-9]+", id: no-x }
  "*.example.test":
    verdict: passthrough
Y
out=$(timeout 10 "$S" policy check "$T/good.yaml" 2>&1); rc=$?
check_eq "policy check of a good file exits 0" 0 "$rc"
check_eq "policy check prints FILE: ok and the count of warnings, last" "$T/good.yaml: ok (1 warning)" "$(printf '%s\n' "$out" | tail -n 1)"
check_match "... after its warning (a wildcard entry overlapping a more specific one), with file:line:col" \
  "^$T/good.yaml:[0-9]+:[0-9]+: warning: host entry '\\*\\.example\\.test' also covers 'api\\.example\\.test'" "$out"
check_eq "policy check --strict refuses it for that warning" 1 "$(timeout 10 "$S" policy check --strict "$T/good.yaml" >/dev/null 2>&1; echo $?)"
bad_case() { # bad_case NAME LINE:COL SED-EXPR
  sed "$3" "$T/good.yaml" >"$T/$1.yaml"
  out=$(timeout 10 "$S" policy check "$T/$1.yaml" 2>&1); rc=$?
  check_eq "policy check $1 exits 1" 1 "$rc"
  check_match "policy check $1 names file:line:col ($2)" "^$T/$1.yaml:$2: " "$out"
}
bad_case unknown-rule-key 9:18 's/allow: { method: GET/allow: { methd: GET/'
bad_case unknown-top-key 5:1 's/^default: deny/bogus: deny/'
bad_case bad-regex 10:46 's|regex:/x/\[0-9\]+|regex:/x/((|'
bad_case bad-verdict 12:14 's/verdict: passthrough/verdict: maybe/'
bad_case bad-default 5:10 's/^default: deny/default: perhaps/'
out=$(timeout 10 "$S" policy check "$T/none.yaml" 2>&1); rc=$?
check_eq "policy check of a missing file exits 1" 1 "$rc"

# version
out=$(timeout 10 "$S" version 2>&1); rc=$?
check_eq "version exits 0" 0 "$rc"
check_match "version prints 'sluice X.Y.Z'" '^sluice [0-9]+\.[0-9]+\.[0-9]+' "$out"
finish
