# bench/run_report.sh - bench/run.sh's report (the tables of docs/performance.md, the goals, the notes; its exit status): sourced by run.sh at this point of its run, with its
# variables and functions (not a script of its own).
# ---------------------------------------------------------------- report
# the first wave's credential table, from the same medians: through without and with the header secret
for k in ka big; do
	R[cred.$k]=${R[$k.through]:-}; R[cred.${k}_secret]=${R[$k.secret]:-}
	R[cred.$k.bad]=${R[$k.through.bad]:-}; R[cred.${k}_secret.bad]=${R[$k.secret.bad]:-}
done
NM=${GW_NOTE:-not measured}
val() { # metric.path -> value, "-" if missing, "!" appended if it had errors
	local v=${R[$1]:-}
	[ -n "$v" ] || { echo -; return; }
	[ -n "${R[$1.bad]:-}" ] && v="$v!"
	echo "$v"
}
bad() { [ -n "${R[$1.direct.bad]:-}${R[$1.through.bad]:-}" ]; }
ratio_row() { # label key goal-ratio
	local d t r met
	d=$(val "$2.direct"); t=$(val "$2.through")
	if [ "$t" = - ] || [ "$d" = - ]; then
		[[ $PATHS == *through* ]] || t=$NM
		r=-; met=-
	else
		r=$(awk -v a="${t%!}" -v b="${d%!}" 'BEGIN { printf "%.2fx", a / b }')
		met=$(awk -v a="${t%!}" -v b="${d%!}" -v g="$3" 'BEGIN { print (a / b >= g) ? "yes" : "NO" }')
		bad "$2" && met="invalid (errors)"
	fi
	printf '| %s | %s | %s | %s | >= %sx | %s |\n' "$1" "$d" "$t" "$r" "$3" "$met"
}
lat_row() {
	local d t r met
	d=$(val lat.direct); t=$(val lat.through)
	if [ "$t" = - ] || [ "$d" = - ]; then
		[[ $PATHS == *through* ]] || t=$NM
		r=-; met=-
	else
		r=$(awk -v a="${t%!}" -v b="${d%!}" 'BEGIN { printf "%+.3f ms", a - b }')
		met=$(awk -v a="${t%!}" -v b="${d%!}" 'BEGIN { print (a - b < 0.3) ? "yes" : "NO" }')
		bad lat && met="invalid (errors)"
	fi
	printf '| p50 latency, one keep-alive GET at a time (ms) | %s | %s | %s | added < 0.3 ms | %s |\n' \
	    "$d" "$t" "$r" "$met"
}
mem_row() {
	local d t met
	d=$(val mem.direct); t=$(val mem.through)
	[ "$d" != - ] && d="$d (nginx)"
	if [ "$t" = - ]; then
		[[ $PATHS == *through* ]] || t=$NM
		met=-
	else
		met=$(awk -v a="$t" 'BEGIN { print (a < 16) ? "yes" : "NO" }')
	fi
	printf '| memory per idle connection at %d connections (KiB) | %s | %s | - | < 16 KiB | %s |\n' \
	    "$IDLE_N" "$d" "$t" "$met"
}
cred_row() { # label key goal: with a secret against without
	local a=${R[cred.$2]} b=${R[cred.$2_secret]} r met
	r=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.2fx", b / a; else print "-" }')
	met=$(awk -v a="$a" -v b="$b" -v g="$3" 'BEGIN { print (a > 0 && b / a >= g) ? "yes" : "NO" }')
	[ -n "${R[cred.$2.bad]:-}${R[cred.$2_secret.bad]:-}" ] && met="invalid (errors)"
	printf '| %s | %s | %s | %s | >= %sx | %s |\n' "$1" "$a" "$b" "$r" "$3" "$met"
}
side_row() { # label metric kind(""|cpu|cpums) [nosecret]
	local p out=() v
	for p in direct relay through secret; do
		if [ "$p" = secret ] && [ -n "${4:-}" ]; then out+=(-); continue; fi
		case $3 in
		cpu) v=$(val "$2.$p.cpu") ;;
		cpums) v=$(ms_of "$2.$p.cpu") ;;
		*) v=$(val "$2.$p") ;;
		esac
		out+=("$v")
	done
	printf '| %s | %s | %s | %s | %s |\n' "$1" "${out[@]}"
}
pair() { echo "$(val "lat.$1") / $(val "lat99.$1")"; }
ms_of() { local v=${R[$1]:-}; [ -n "$v" ] && awk -v v="$v" 'BEGIN { printf "%.3f", v / 1000 }' || echo -; }
diff_of() { # a b -> a - b (ms), or -
	local a=${R[$1]:-} b=${R[$2]:-}
	[ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a - b }' || echo -
}
goal_row() { # label sluice reference
	local met=-
	[ "$2" != - ] && [ "$3" != - ] && met=$(awk -v a="${2%!}" -v b="${3%!}" 'BEGIN { print (a <= b) ? "yes" : "NO" }')
	printf '| %s | %s | %s | %s |\n' "$1" "$2" "$3" "$met"
}
round_lines() {
	local k out=""
	for k in ka h2 nc big lat; do
		for p in direct relay through secret; do
			[ -n "${R[$k.$p.runs]:-}" ] && out="$out $k/$p ${R[$k.$p.runs]}${R[$k.$p.cpuruns]:+ (CPU ${R[$k.$p.cpuruns]})};"
		done
	done
	echo "${out# }"
}
declare -A LABEL=([ka]="keep-alive" [nc]="new connections" [big]="1 MiB downloads"
    [lat]="latency" [mem]="idle memory" [h2]="h2 small GETs")
note_lines() {
	local k p
	for k in ka nc big h2 lat mem; do
		for p in direct relay through secret; do
			[ -n "${R[$k.$p.note]:-}" ] &&
			    printf -- '- %s, %s: %s\n' "${LABEL[$k]}" "$p" "${R[$k.$p.note]}"
		done
	done
	return 0
}

CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
REV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
{
	echo "# Sluice benchmark results"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), sluice rev $REV; $(nproc) CPUs ($CPU),"
	echo "Debian $(cat /etc/debian_version), kernel $(uname -r), $(nginx -v 2>&1 | sed 's/^nginx version: //'),"
	echo "$(openssl version | cut -d' ' -f1-2); client, gateway and nginx share the machine;"
	echo "load average before the run $LOAD_START (after building), at the end $(cut -d' ' -f1 /proc/loadavg)."
	echo
	echo "| metric | direct | through | ratio | goal | met? |"
	echo "|---|---|---|---|---|---|"
	ratio_row "keep-alive small GETs, wrk -t$KA_THREADS -c$KA_CONNS (req/s)" ka 0.30
	ratio_row "new connections, full TLS handshakes, -C $CONC (conn/s)" nc 0.20
	ratio_row "1 MiB downloads, wrk -t$BIG_THREADS -c$BIG_CONNS (MiB/s)" big 0.40
	ratio_row "h2 small GETs, h2load -c$H2_CONNS -m$H2_STREAMS (req/s)" h2 0.35
	lat_row
	mem_row
	echo
	if [[ $PATHS == *relay* ]] || [[ $PATHS == *through* ]]; then
		echo "Side by side (issue 20; medians of $ROUNDS interleaved rounds; \"server CPU\" is utime + stime of the"
		echo "serving process, all threads, over the work it completed: nginx for direct, haproxy for the relay):"
		echo
		echo "| figure | direct | HAProxy (relay) | Sluice | Sluice with a header secret |"
		echo "|---|---|---|---|---|"
		side_row "keep-alive HTTP/1.1 req/s (wrk -t$KA_THREADS -c$KA_CONNS, small answers)" ka ""
		side_row "keep-alive HTTP/2 req/s (h2load -c$H2_CONNS -m$H2_STREAMS)" h2 "" nosecret
		side_row "new TLS connections/s (full handshakes, -C $CONC)" nc "" nosecret
		side_row "1 MiB downloads, MiB/s (wrk -t$BIG_THREADS -c$BIG_CONNS; with a secret: scrubbed)" big ""
		printf '| p50 / p99 latency, one keep-alive request at a time (ms) | %s | %s | %s | %s |\n' \
		    "$(pair direct)" "$(pair relay)" "$(pair through)" "$(pair secret)"
		side_row "server CPU per keep-alive HTTP/1.1 request (us)" ka cpu
		side_row "server CPU per HTTP/2 request (us)" h2 cpu nosecret
		side_row "server CPU per new connection (us)" nc cpu nosecret
		side_row "server CPU per MiB (ms)" big cpums
		printf '| RSS at %s idle connections (MiB) | %s | %s | %s | - |\n' "$IDLE_N" "$(val rss.direct) (nginx)" \
		    "$(val rss.relay)" "$(val rss.through)"
		printf '| gateway RSS after start (MiB) | - | - | %s | - |\n' "$(val rss0.through)"
		echo
		echo "Goals of issue 20 (Sluice against HAProxy in this run; the absolute figures are where the issue's"
		echo "peer harness put HAProxy):"
		echo
		echo "| goal | Sluice | HAProxy | met? |"
		echo "|---|---|---|---|"
		goal_row "CPU per keep-alive HTTP/1.1 request (us), <= HAProxy's (peer: 25)" "$(val ka.through.cpu)" "$(val ka.relay.cpu)"
		goal_row "... with a header secret injected (us), <= HAProxy's (peer: 27)" "$(val ka.secret.cpu)" "$(val ka.relay.cpu)"
		goal_row "CPU per HTTP/2 request (us), <= HAProxy's (peer: 18)" "$(val h2.through.cpu)" "$(val h2.relay.cpu)"
		goal_row "added p50 latency, through minus direct (ms), <= HAProxy's (peer: 0.05)" \
		    "$(diff_of lat.through lat.direct)" "$(diff_of lat.relay lat.direct)"
		goal_row "CPU per MiB (ms), <= HAProxy's" "$(ms_of big.through.cpu)" "$(ms_of big.relay.cpu)"
		goal_row "CPU per MiB scrubbed (ms), <= 1.15x unscrubbed" "$(ms_of big.secret.cpu)" \
		    "$(awk -v a="$(ms_of big.through.cpu)" 'BEGIN { if (a + 0 > 0) printf "%.3f", a * 1.15; else print "-" }')" 
		goal_row "CPU per new connection (us), <= HAProxy's" "$(val nc.through.cpu)" "$(val nc.relay.cpu)"
		echo
		echo "Per-round values: $(round_lines)"
		[ -n "$HAP_NOTE" ] && echo "- relay: $HAP_NOTE"
		echo
	fi
	echo "Paths (all clients run inside netns $NS):"
	echo "- direct: sandbox $SBX_IP -> veth -> nginx $HOST_IP:$DIRECT_PORT"
	echo "- relay: sandbox $SBX_IP -> veth -> $HOST_IP:$RELAY_PORT -> nft redirect -> haproxy :$HP -> nginx $HOST_IP:$RELAY_PORT (its original destination)"
	echo "- through: sandbox $SBX_IP -> veth -> $HOST_IP:443 -> nft redirect -> sluice transparent :$TP -> nginx $UPADDR:443"
	echo "- secret: as through, each request with \"Authorization: Bearer <placeholder>\" (the secret injected; 1 MiB answers scrubbed)"
	[ -n "$GW_NOTE" ] && echo "- through: $GW_NOTE"
	echo
	if [ -n "${R[cred.ka]:-}" ]; then
		echo "Credentials (through the gateway, without and with an injected header secret; medians of $ROUNDS rounds):"
		echo
		echo "| metric | without | with a secret | ratio | goal | met? |"
		echo "|---|---|---|---|---|---|"
		cred_row "keep-alive small GETs, wrk -t$KA_THREADS -c$KA_CONNS (req/s)" ka 0.95
		cred_row "1 MiB downloads, scrubbed, wrk -t$BIG_THREADS -c$BIG_CONNS (MiB/s)" big 0.70
		echo
		echo "Runs: keep-alive ${R[ka.through.runs]:-} without, ${R[ka.secret.runs]:-} with; 1 MiB" \
		    "${R[big.through.runs]:-} without, ${R[big.secret.runs]:-} with. Audit lines with the secret injected:" \
		    "${R[cred.injected]:-} (1 MiB downloads among them: ${R[cred.scrubbed_bodies]:-})."
		echo
	fi
	if [ -n "${R[sem.path]:-}" ]; then
		echo "Semantic policy (through the gateway, keep-alive POSTs of a 1 KiB JSON body; best of two runs each):"
		echo
		echo "| metric | path-only rule | JSON rule (\$.channel in) | ratio | goal | met? |"
		echo "|---|---|---|---|---|---|"
		a=${R[sem.path]} b=${R[sem.json]}
		r=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.2fx", b / a; else print "-" }')
		met=$(awk -v a="$a" -v b="$b" 'BEGIN { print (a > 0 && b / a >= 0.80) ? "yes" : "NO" }')
		[ -n "${R[sem.path.bad]:-}${R[sem.json.bad]:-}" ] && met="invalid (errors)"
		printf '| keep-alive POSTs, wrk -c%s (req/s) | %s | %s | %s | >= 0.80x | %s |\n' "$CONC" "$a" "$b" "$r" "$met"
		echo
		echo "Runs: path-only ${R[sem.path.runs]}, JSON rule ${R[sem.json.runs]} req/s; gateway CPU per request:" \
		    "path-only ${R[sem.path.cpu]}, JSON rule ${R[sem.json.cpu]} us. ${R[sem.audit]:-}"
		echo
	fi
	if want profile && [ -s "$DIR/perfstat-through-clock.csv" ]; then
		profile_report through
		profile_report secret
	fi
	echo "A value marked ! had errors (failed connections or non-2xx answers): see Details."
	echo
	echo "Details:"
	note_lines
} >"$DIR/report.md"

echo
cat "$DIR/report.md"
if [ -z "${BENCH_ONLY:-}" ]; then
	mkdir -p "$ROOT/bench/results"
	cp "$DIR/report.md" "$ROOT/bench/results/latest.md"
	log "wrote bench/results/latest.md; total $((SECONDS - T_START)) s"
else
	log "partial run (BENCH_ONLY), bench/results/latest.md left as it was; total $((SECONDS - T_START)) s"
fi
FAILED=0
if [[ $PATHS != *through* ]] && [ "$DIRECT_ONLY" = 0 ]; then
	exit 3
fi
exit 0
