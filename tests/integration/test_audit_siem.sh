#!/bin/bash
# The audit trail to the SIEM (issue 22 item 3): a real rsyslogd of this test's own (Debian's rsyslog; its own
# config in $T: imudp and imtcp on loopback ports picked here, one output file, no system socket) receives the
# gateway's audit.syslog copy over UDP, then over TCP (octet counting); every message must parse as RFC 5424 with
# the STRUCTURED-DATA element sluice@<enterprise> carrying the record's members, its line hash, and consecutive
# seqs (syslog5424.py); rsyslog's own parse must agree. Then the collector is stopped: requests still pass and
# the drops are counted in /metrics (sluice_audit_syslog_dropped_total), not a stuck gateway. The same runs write
# audit.ocsf, and every event is validated against the OCSF 1.3.0 class definitions kept in
# tests/fixtures/ocsf-1.3.0 (ocsf_validate.py): requests, DNS answers of its responder (listen.dns) and refused
# connections; the validator's --self-test then breaks one produced event of each class in each way it checks and
# must reject every broken copy. SIGUSR1 reopens the OCSF file. The audit files verify at the end: it stays the record of truth.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"

HERE=$(dirname "$(readlink -f "$0")")
FIX=$(readlink -f "$HERE/../fixtures/ocsf-1.3.0")
RSYSLOGD=$(command -v rsyslogd || echo /usr/sbin/rsyslogd)
[ -x "$RSYSLOGD" ] || die "rsyslogd not found (Debian package rsyslog; scripts/deps.sh installs it)"

pki_init
nginx_start

# ---------------------------------------------------------------- the collector
UDPP=$(freeport) TCPP=$(freeport)
RS=$T/rsyslog
mkdir -p "$RS/work"
cat >"$RS/rsyslog.conf" <<CONF
global(workDirectory="$RS/work" maxMessageSize="64k")
module(load="imudp")
module(load="imtcp")
template(name="probe" type="string"
  string="{\"input\":\"%inputname%\",\"ver\":\"%protocol-version%\",\"msgid\":\"%msgid:::json%\",\"sd\":\"%structured-data:::json%\",\"raw\":\"%rawmsg:::json%\"}\n")
ruleset(name="siem") {
  action(type="omfile" file="$RS/got.jsonl" template="probe" flushOnTXEnd="on" asyncWriting="off")
}
input(type="imudp" address="127.0.0.1" port="$UDPP" ruleset="siem")
input(type="imtcp" address="127.0.0.1" port="$TCPP" ruleset="siem")
CONF
rs_start() {
  spawn "$RS/rsyslogd.out" "$RSYSLOGD" -n -f "$RS/rsyslog.conf" -i "$RS/rsyslogd.pid"
  RSPID=$LASTPID
  eventually 10 sh -c "ss -ltnH | grep -q '127.0.0.1:$TCPP '" ||
    die "rsyslogd did not listen on $TCPP: $(tail -n 5 "$RS/rsyslogd.out")"
}
rs_start

scrape() { timeout 10 curl -sS --max-time 5 --unix-socket "$ADMIN" http://sluice/metrics; }
metric() { scrape | awk -v n="$1" '$1 == n { print $2 }'; }
traffic() {  # $1: a tag; allowed, denied by path, denied by host (a connection refusal)
  local i
  for i in 1 2 3; do pcurl -o /dev/null "https://api.example.test/ok/$1-$i" || bad "request $1-$i failed"; done
  pcurl -g -o /dev/null "https://api.example.test/no/$1]\\x" 2>/dev/null   # SD-PARAM escapes: ] and \
  pcurl -o /dev/null "https://api.example.test/no/$1?q=a" 2>/dev/null
  pcurl -o /dev/null "https://other.example.test/$1" 2>/dev/null
  dnsq api.example.test 1 >/dev/null     # DNS Activity: an answer
  dnsq nx-$1.attacker.test 1 >/dev/null  # ... and a refusal
  return 0
}
DNSP=$(freeport)
GW_DNS="127.0.0.1:$DNSP"
dnsq() {  # NAME QTYPE: one query to the gateway's DNS responder; prints "rcode N an M" (stdlib only)
  "$PY" -c '
import socket, struct, sys
port, name, qt = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack(">HH", qt, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.sendto(q, ("127.0.0.1", port))
try:
    d = s.recv(4096)
    print("rcode", d[3] & 15, "an", struct.unpack(">H", d[6:8])[0])
except socket.timeout:
    print("timeout")
' "$DNSP" "$1" "$2"
}
conf() {  # $1: the syslog address
  GW_EXTRA="  syslog: { address: \"$1\", format: rfc5424, enterprise: \"32473.7\" }
  ocsf: { file: $T/ocsf.jsonl }
  log_query: true"
  policy_base </dev/null | gw_conf
}

# ---------------------------------------------------------------- 1. UDP
conf "udp://127.0.0.1:$UDPP"
gw_start
traffic udp
check "the UDP run's records reach rsyslog" eventually 10 grep -q 'udp-3' "$RS/got.jsonl"
gw_stop
check_eq "the gateway stops cleanly" 0 "$GW_RC"
check "  its stop record reaches rsyslog too" eventually 5 grep -qF '"input":"imudp","ver":"1","msgid":"stop"' "$RS/got.jsonl"
out=$("$PY" "$HERE/syslog5424.py" "$RS/got.jsonl" imudp "$AUDIT" 32473.7)
check_match "over UDP: every message parses as RFC 5424 with sluice@32473.7 SD-PARAMs, seqs consecutive from the start record to the stop record" '^ok [0-9]+ ' "$out"
n_udp=$(printf '%s' "$out" | awk '{print $2}')
check_eq "  and that is every record of the run (start .. stop)" \
  "$(jq -c 'select(.type == "start")' "$AUDIT" | wc -l | tr -d ' ') $(wc -l <"$AUDIT" | tr -d ' ')" "1 $n_udp"

# ---------------------------------------------------------------- 2. TCP, octet counting
lines_before=$(wc -l <"$AUDIT")
conf "tcp://127.0.0.1:$TCPP"
gw_start
traffic tcp
check "the TCP run's records reach rsyslog" eventually 10 grep -q 'tcp-3' "$RS/got.jsonl"
out=$("$PY" "$HERE/syslog5424.py" "$RS/got.jsonl" imtcp "$AUDIT" 32473.7)
check_match "over TCP: every message parses as RFC 5424 (octet-counted frames split right), SD-PARAMs, seqs consecutive from this run's start record" '^ok [0-9]+ ' "$out"
first_tcp=$(printf '%s' "$out" | awk '{print $3}')
check_eq "  the first one is this run's start record (nothing lost while connecting)" "$((lines_before + 1))" "$first_tcp"
check_eq "  no drops counted while the collector is up" 0 "$(metric sluice_audit_syslog_dropped_total)"

# logrotate moves the OCSF file (and the audit file) and sends SIGUSR1: the writer reopens both by name
mv "$T/ocsf.jsonl" "$T/ocsf.jsonl.1"
kill -USR1 "$GWPID"
eventually 5 test -f "$T/ocsf.jsonl" || true
pcurl -o /dev/null "https://api.example.test/ok/after-usr1"
check "after SIGUSR1 the OCSF events go to a new file by the configured name" \
  eventually 10 grep -q '"path":"/ok/after-usr1"' "$T/ocsf.jsonl"
check_nomatch "  and not to the moved one" 'after-usr1' "$(cat "$T/ocsf.jsonl.1")"

# ---------------------------------------------------------------- 3. the collector stops: counted drops, no stuck gateway
kill "$RSPID"; wait "$RSPID" 2>/dev/null
eventually 5 sh -c "! ss -ltnH | grep -q '127.0.0.1:$TCPP '" || die "rsyslogd did not stop"
okc=0
for i in $(seq 1 30); do
  [ "$(pcurl -o /dev/null -w '%{http_code}' "https://api.example.test/ok/down-$i")" = 200 ] && okc=$((okc + 1))
done
check_eq "with the collector down, requests still pass (30 of 30)" 30 "$okc"
check "  they are in the audit file" audit_wait 'select(.path == "/ok/down-30")'
check "  and the syslog copy's drops are counted in /metrics" \
  eventually 10 sh -c "test \"\$(timeout 5 curl -sS --unix-socket '$ADMIN' http://sluice/metrics | awk '\$1 == \"sluice_audit_syslog_dropped_total\" { print \$2 }')\" -ge 1"
check_match "  /health still says ok" '"status": *"ok"' "$(gw_health)"
gw_stop
check_eq "the gateway stops cleanly with the collector gone" 0 "$GW_RC"

# ---------------------------------------------------------------- 4. the OCSF events
cat "$T/ocsf.jsonl.1" "$T/ocsf.jsonl" >"$T/ocsf.all"
ROTATED=$(ls "$AUDIT".* 2>/dev/null | grep -E '\.[0-9]{8}T[0-9]{6}Z$' | head -n 1)
[ -n "$ROTATED" ] || bad "SIGUSR1 rotated the audit file"
cat "$ROTATED" "$AUDIT" >"$T/audit.all"
out=$("$PY" "$HERE/ocsf_validate.py" "$FIX" "$T/ocsf.all" "$T/audit.all" 2>&1)
check_match "every OCSF event validates against the OCSF 1.3.0 definitions (required, profiles, no unknown keys, types, enums)" '^ok ' "$out"
check_match "  HTTP Activity, DNS Activity and Network Activity events were written" \
  '4001=[1-9][0-9]* 4002=[1-9][0-9]* 4003=[1-9]' "$out"
printf '%s\n' "$out" | tail -n 1 >&2   # the recommended attributes the events leave out (a report)
out=$("$PY" "$HERE/ocsf_validate.py" --self-test "$FIX" "$T/ocsf.all" 2>&1)
check_match "  the validator rejects broken copies of produced events (each of its checks can fail)" '^self-test ok ' "$out"
check_eq "  a refused DNS name: class 4003, Response, rcode NXDomain (3), no answers, action Denied" "4003 400302 3 0 2" \
  "$(cat "$T/ocsf.all" | jq -r 'select(.query.hostname == "nx-tcp.attacker.test") | "\(.class_uid) \(.type_uid) \(.rcode_id) \(.answers | length) \(.action_id)"')"
check_eq "  an allowed GET: class 4002, activity 3 (Get), type_uid 400203, action Allowed, the upstream's 200 from its response record, seq of the request line" \
  "4002 3 400203 1 1 200 request" \
  "$(cat "$T/ocsf.all" | jq -r 'select(.http_request.url.path == "/ok/tcp-1") | "\(.class_uid) \(.activity_id) \(.type_uid) \(.action_id) \(.disposition_id) \(.http_response.code) \(.metadata.sequence)"' |
     while read -r a b c d e f s; do printf '%s %s %s %s %s %s %s' "$a" "$b" "$c" "$d" "$e" "$f" "$(jq -r --argjson s "$s" 'select(.seq == $s) | .type' "$T/audit.all")"; done)"
check_eq "  a denied path: action Denied, disposition Blocked, the query string apart, the rule's reason as condition, the gateway's 403" \
  "2 2 q=a true 403" \
  "$(cat "$T/ocsf.all" | jq -r 'select(.http_request.url.path == "/no/tcp") | "\(.action_id) \(.disposition_id) \(.http_request.url.query_string) \(.firewall_rule.condition != null) \(.http_response.code)"')"
check_eq "  a refused host: class 4001, activity 5 (Refuse), dst hostname" "4001 5 other.example.test" \
  "$(cat "$T/ocsf.all" | jq -r 'select(.class_uid == 4001) | "\(.class_uid) \(.activity_id) \(.dst_endpoint.hostname)"' | sort -u | head -n 1)"

# ---------------------------------------------------------------- 5. the file is the record
check_match "the audit files verify (sluice audit verify, the rotated one and the current one)" '^ok: ' \
  "$("$SLUICE" audit verify "$ROTATED" "$AUDIT" 2>&1)"
check_nomatch "the gateway's log has no sanitizer report" 'AddressSanitizer|LeakSanitizer|runtime error:' "$(cat "$GWLOG")"
finish
