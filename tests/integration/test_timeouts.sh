#!/usr/bin/env bash
# Bad input, time: a client that connects and sends nothing (explicit and transparent listeners) is closed after
# limits.request_head; a client that completes TLS and sends half a request head gets 408 and is closed; a slowloris
# sending one header byte per second is cut off by limits.request_head (the limit is on the whole head, not per
# byte); a tunnel that never starts TLS is closed after limits.tls_handshake; an idle keep-alive connection is closed
# after limits.idle. The limits are 2 s; the assertions only bound the closes generously (10-15 s), never time them.
# After each, a normal request from another client still succeeds, and the gateway stays up.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
RAW=$(dirname "$(readlink -f "$0")")/rawclient.py

pki_init
nginx_start
netns_make t
netns_redirect
GW_EXTRA="limits: { request_head: 2s, tls_handshake: 2s, idle: 2s }"
gw_conf <<YAML
default: deny
hosts:
  api.example.test:
    allow_private: true
YAML
gw_start

rc() { $CLEAN timeout 30 "$PY" "$RAW" --proxy "127.0.0.1:$PP" --cafile "$CA/ca.pem" --timeout 15 --end "$@"; }
nsrc() { ns_exec timeout 30 "$PY" "$RAW" --direct "$NS_HOST:443" --cafile "$CA/ca.pem" --timeout 15 --end "$@"; }
alive_check() {
  check_eq "  and then a normal request from another client succeeds" hello "$(pcurl --interface 127.0.0.2 https://api.example.test/ok/after)"
  check_eq "  and a transparent one too" hello "$(ns_exec curl -sS --max-time 10 --cacert "$CA/ca.pem" \
    --resolve "api.example.test:443:$NS_HOST" https://api.example.test/ok/after-t)"
}
status_end() { printf '%s\n' "$1" | sed -n '1p;$p' | tr '\n' ' ' | sed 's/ $//'; }

check_eq "the transparent path works before the bad inputs" hello "$(ns_exec curl -sS --max-time 10 --cacert "$CA/ca.pem" \
  --resolve "api.example.test:443:$NS_HOST" https://api.example.test/ok/t)"

# connect and send nothing
before=$(audit_n '.rule == "limits.request_head"')
check_eq "explicit: a client that sends nothing is closed (no answer)" "000 end: eof" "$(status_end "$(rc)")"
check "  with an audit line naming limits.request_head" eventually 5 test "$(audit_n '.rule == "limits.request_head"')" -gt "$before"
alive_check
before=$(audit_n '.rule == "limits.request_head"')
check_eq "transparent: a client that sends nothing is closed (no answer)" "000 end: eof" "$(status_end "$(nsrc)")"
check "  with an audit line naming limits.request_head" eventually 5 test "$(audit_n '.rule == "limits.request_head"')" -gt "$before"
check_match "  that records the original destination" "\"dest\":\"$NS_HOST:443\"" "$(audit_get '.rule == "limits.request_head"' | tail -n 1)"
alive_check
# a connection to the transparent port that was not redirected is refused at once (not served, not timed)
before=$(audit_n '.type == "denial"')
check_eq "transparent port reached directly (not redirected): closed without an answer" "000 end: eof" \
  "$(status_end "$($CLEAN timeout 30 "$PY" "$RAW" --direct "127.0.0.1:$TP" --timeout 15 --end)")"
check "  with a denial audit record" eventually 5 test "$(audit_n '.type == "denial"')" -gt "$before"

# half a request head after TLS -> 408 then closed
half='GET /ok/half HTTP/1.1\r\nHost: api.example.test\r\nX-Half: abc'
out=$(rc --connect api.example.test:443 --send "$half")
check_eq "explicit tunnel: half a head -> 408, then closed" "408 end: eof" "$(status_end "$out")"
check_match "  with a JSON reason naming limits.request_head" '"rule":"limits.request_head"' "$out"
check "  and an audit line with status 408" audit_wait '.status == 408 and .rule == "limits.request_head"'
alive_check
out=$(nsrc --tls --sni api.example.test --send "$half")
check_eq "transparent TLS: half a head -> 408, then closed" "408 end: eof" "$(status_end "$out")"
alive_check
out=$(rc --send 'GET http://api.example.test/ok/half HTTP/1.1\r\nHost: api.example.test\r\nX-Half: abc')
check_eq "explicit plain (absolute-form): half a head -> 408, then closed" "408 end: eof" "$(status_end "$out")"
alive_check
out=$(nsrc --send 'GET /ok/half HTTP/1.1\r\nHost: api.example.test\r\nX-Half: abc')
# the transparent plain path: port 443 was redirected, but the first byte is a letter: plain HTTP
check_eq "transparent plain HTTP: half a head -> 408, then closed" "408 end: eof" "$(status_end "$out")"
alive_check

# slowloris: a head started at once, then one header byte per second: cut off by limits.request_head (2 s),
# long before the 20 trickled bytes would have finished
out=$(rc --connect api.example.test:443 --send 'GET /ok/slow HTTP/1.1\r\nHost: api.example.test\r\n' \
  --trickle 'X-Slow: abcdefghijklm\r\n\r\n' --trickle-delay 1)
check_match "explicit tunnel: slowloris (one header byte per second) -> 408 and closed" '^408 end: (eof|reset)$' "$(status_end "$out")"
check_eq "  and the slow request never reached the upstream" "" "$(grep -F /ok/slow "$NGXLOG")"
alive_check
out=$(nsrc --tls --sni api.example.test --send 'GET /ok/slow2 HTTP/1.1\r\n' --trickle 'Host: api.example.test\r\n\r\n' --trickle-delay 1)
check_match "transparent TLS: slowloris -> 408 and closed" '^408 end: (eof|reset)$' "$(status_end "$out")"
alive_check
# a slowloris on the very first bytes of the explicit listener (before any request line is complete)
out=$(rc --trickle 'CONNECT api.example.test:443 HTTP/1.1\r\n\r\n' --trickle-delay 1)
check_match "explicit: a CONNECT line trickled one byte per second is cut off" '^(000|408) end: (eof|reset)$' "$(status_end "$out")"
alive_check

# CONNECT answered, then no TLS ClientHello: closed after limits.tls_handshake
out=$(rc --send 'CONNECT api.example.test:443 HTTP/1.1\r\nHost: api.example.test:443\r\n\r\n')
check_eq "explicit: a tunnel that never starts TLS is closed" "200 end: eof" "$(status_end "$out")"
check "  with an audit line naming limits.tls_handshake" audit_wait '.rule == "limits.tls_handshake"'
alive_check

# idle keep-alive: one complete request, then silence: closed after limits.idle
out=$(rc --connect api.example.test:443 --send 'GET /ok/idle HTTP/1.1\r\nHost: api.example.test\r\n\r\n')
check_eq "explicit tunnel: after a keep-alive response, an idle connection is closed" "$(printf '200\nhello\nend: eof')" "$out"
alive_check

gw_final_checks
finish
