#!/usr/bin/env bash
# The gateway's DNS responder (listen.dns) as a sandbox of `sluice run` sees it: names resolve through the
# sandbox's resolv.conf (UDP 53, redirected by the sandbox's nft table), and an allowed HTTPS request works by
# name alone (no --resolve); a name the policy cannot allow is NXDOMAIN; MX of an allowed name is NODATA; the
# answer is a synthetic address (198.18.0.0/15); a connection to the synthetic address of one name whose SNI names
# another is refused; an IP-literal connection to a synthetic address is judged as the name behind it; a synthetic
# address never given out is refused; every query is audited (type "dns", the sandbox's name, qtype, answer); the
# gateway resolved nothing for the refused names. Also: a datagram shorter than a DNS header (it crashes libevent
# 2.1.12's evdns) leaves the responder answering. Issue 24: the sandbox's own host name resolves from its /etc/hosts
# (no DNS query for it is audited), and a command that exits non-zero gets a summary of what the gateway refused for
# its sandbox (the name outside the policy, the refused request and its rule); one that exits 0 does not.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
[ -x /usr/bin/bwrap ] || die "bubblewrap (/usr/bin/bwrap) is missing"
track_sandbox_objects

DNSP=$(freeport)
GW_DNS="[::]:$DNSP"
GW_EXTRA='sandbox: { backend: netns, uid: 1234 }'   # the uid sluice run uses when --uid is not given
nginx_start
policy_base 'allow: { method: GET, path: "/ok/**" }' <<'YAML' | gw_conf
YAML
gw_start

WS=$T/ws
mkdir -p "$WS"
# q.py NAME TYPE: one query to the resolver of resolv.conf, prints "rcode answers..." (hand-built, stdlib only)
cat >"$WS/q.py" <<'PY'
import random, socket, struct, sys
name, qtype = sys.argv[1], {"A": 1, "AAAA": 28, "MX": 15}[sys.argv[2]]
ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
qid = random.randrange(65536)
q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack(">HH", qtype, 1)
s = socket.socket(socket.AF_INET6 if ":" in ns else socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.sendto(q, (ns, 53))
r = s.recv(1500)
rcode, an = r[3] & 15, struct.unpack(">H", r[6:8])[0]
i = 12
while r[i]:
    i += r[i] + 1
i += 5
out = []
for _ in range(an):
    i += 2 if r[i] & 0xc0 == 0xc0 else 0
    t, _, _, ln = struct.unpack(">HHIH", r[i:i + 10]); i += 10
    out.append(socket.inet_ntop(socket.AF_INET if t == 1 else socket.AF_INET6, r[i:i + ln])); i += ln
print(rcode, *out)
PY
cat >"$WS/probe.sh" <<'SH'
cd /workspace
echo "UID $(id -u)"
echo "SELF $(getent ahostsv4 sandbox | head -n 1 | cut -d' ' -f1) $(getent ahostsv6 sandbox | head -n 1 | cut -d' ' -f1)"
echo "A $(python3 q.py api.example.test A)"
echo "AAAA $(python3 q.py api.example.test AAAA)"
echo "MX $(python3 q.py api.example.test MX)"
echo "NX $(python3 q.py exfil.attacker.test A)"
echo "GET $(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' https://api.example.test/ok/bydns)"
a=$(python3 q.py api.example.test A | cut -d' ' -f2)
echo "OTHER $(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' --resolve "other.example.test:443:$a" https://other.example.test/ok/x 2>&1 | tail -c 60)"
echo "UNGIVEN $(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' --resolve "api.example.test:443:198.19.255.254" https://api.example.test/ok/x 2>&1 | tail -c 60)"
echo "PLAIN $(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -H 'Host: other.example.test' "http://$a/ok/x")"
SH
chmod -R a+rX "$WS"
out=$("$SLUICE" run -c "$GWCONF" --name dns-probe --workspace "$WS" -- sh /workspace/probe.sh 2>"$T/run.err")
rc=$?
check_eq "sluice run exits 0" 0 "$rc"
check_eq "the command runs as the configuration's sandbox.uid" "UID 1234" "$(printf '%s\n' "$out" | grep '^UID')"
check_eq "the sandbox's host name resolves inside it (/etc/hosts)" "SELF 127.0.0.1 ::1" "$(printf '%s\n' "$out" | grep '^SELF')"
a=$(printf '%s\n' "$out" | sed -n 's/^A 0 //p')
check_match "A of an allowed name: NOERROR and a synthetic address (198.18.0.0/15)" '^198\.1[89]\.[0-9]+\.[0-9]+$' "$a"
check_match "AAAA: NOERROR and a synthetic IPv6 address (fd00:5c:5e::/96)" '^AAAA 0 fd00:5c:5e::[0-9a-f:]+$' \
  "$(printf '%s\n' "$out" | grep '^AAAA')"
check_eq "MX of an allowed name: NODATA (NOERROR, no answer)" "MX 0" "$(printf '%s\n' "$out" | grep '^MX')"
check_eq "a name the policy cannot allow: NXDOMAIN (3)" "NX 3" "$(printf '%s\n' "$out" | grep '^NX')"
check_eq "HTTPS by name alone (resolver, synthetic address, redirect, SNI): 200" "GET 200" "$(printf '%s\n' "$out" | grep '^GET')"
check_match "the synthetic address of api.example.test with SNI other.example.test: refused" '^OTHER (000|curl)' \
  "$(printf '%s\n' "$out" | grep '^OTHER')"
check "  audited with the listen.dns rule" \
  audit_wait '.type == "denial" and .rule == "listen.dns" and .sandbox == "dns-probe" and (.reason | test("differs"))'
check_match "a synthetic address never given out: refused" '^UNGIVEN (000|curl)' "$(printf '%s\n' "$out" | grep '^UNGIVEN')"
check "  audited as such" audit_wait '.rule == "listen.dns" and (.reason | test("did not give out"))'
check_eq "plain HTTP to api's synthetic address with Host other.example.test: 421" "PLAIN 421" \
  "$(printf '%s\n' "$out" | grep '^PLAIN')"
check "every query is audited: type dns, the sandbox's name, qtype and answer" \
  audit_wait '.type == "dns" and .sandbox == "dns-probe" and .host == "api.example.test" and .qtype == "A" and (.answer | startswith("A 198.1"))'
check "  the NXDOMAIN too, as a denial" \
  audit_wait '.type == "dns" and .host == "exfil.attacker.test" and .answer == "NXDOMAIN" and .verdict == "deny"'
check "  and the request by name names the sandbox" audit_wait '.path == "/ok/bydns" and .status == 200 and .sandbox == "dns-probe"'
check_eq "  no DNS query for the sandbox's own name was audited" "" "$(audit_view | jq -c 'select(.type == "dns" and (.host == "sandbox" or (.host | startswith("sandbox."))))')"

# a datagram shorter than a DNS header, straight at the responder, then a normal query still gets an answer
"$PY" - "$DNSP" <<'PY' >"$T/short.out" 2>&1
import socket, struct, sys
p = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
for n in range(0, 12):
    s.sendto(b"\x01" * n, ("127.0.0.1", p))
q = struct.pack(">HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"\x03api\x07example\x04test\x00" + struct.pack(">HH", 1, 1)
s.sendto(q, ("127.0.0.1", p))
r = s.recv(1500)
print("rcode", r[3] & 15, "answers", struct.unpack(">H", r[6:8])[0])
PY
check_eq "after 12 datagrams shorter than a DNS header, the responder still answers" "rcode 0 answers 1" "$(cat "$T/short.out")"
# a command that fails: sluice run says what the gateway refused for this sandbox during the run (issue 24), from the
# audit: the name outside the policy (which the client only shows as "Could not resolve host") and a refused request
cat >"$WS/fail.sh" <<'SH'
curl -sS --max-time 10 https://exfil.attacker.test/x
curl -sS --max-time 10 -o /dev/null https://api.example.test/admin
exit 3
SH
chmod a+r "$WS/fail.sh"
"$SLUICE" run -c "$GWCONF" --name refused-run --workspace "$WS" -- sh /workspace/fail.sh >/dev/null 2>"$T/fail.err"
rc=$?
check_eq "a failing command's status passes through" 3 "$rc"
check_match "  curl only says it could not resolve the name" 'Could not resolve host: exfil.attacker.test' "$(cat "$T/fail.err")"
check_match "  sluice run then says what the gateway refused for the sandbox" \
  '^sluice run: the command exited with status 3; the gateway refused, for sandbox refused-run:$' "$(cat "$T/fail.err")"
check_match "  the name outside the policy" '^sluice run:   exfil\.attacker\.test: not in the policy \(its DNS answer was NXDOMAIN\)$' \
  "$(cat "$T/fail.err")"
check_match "  the refused request, with its rule" '^sluice run:   api\.example\.test: GET /admin: no rule matched \(rule default\)$' \
  "$(cat "$T/fail.err")"
"$SLUICE" run -c "$GWCONF" --name refused-run --workspace "$WS" -- true 2>"$T/ok.err"
check_eq "a command that exits 0: no summary (the earlier run's refusals are not this run's)" "" \
  "$(grep 'the gateway refused' "$T/ok.err")"
"$SLUICE" run -c "$GWCONF" --name refused-run --workspace "$WS" -- false 2>"$T/false.err"
check_eq "a command failing without refusals: no summary either (only this run's records count)" "" \
  "$(grep 'the gateway refused' "$T/false.err")"

sed -i 's/backend: netns/backend: qemu/' "$GWCONF"
"$SLUICE" run -c "$GWCONF" -- true 2>"$T/qemu.err"
check_eq "sandbox.backend: qemu is read by sluice run: without sandbox.qemu.kernel it refuses (exit 1), saying so" \
  "1 sets no sandbox.qemu.kernel" "$? $(grep -o 'sets no sandbox.qemu.kernel' "$T/qemu.err")"
check_eq "no sluice_* netns, table, veth or lock left" "" "$(new_objects)"
gw_final_checks
finish
