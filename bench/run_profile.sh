# bench/run_profile.sh - bench/run.sh's profile (BENCH_ONLY=profile: per-request counts, perf record): sourced by run.sh at this point of its run, with its
# variables and functions (not a script of its own).
# ---------------------------------------------------------------- profile (issue 20: where a request's cost goes)
# BENCH_ONLY=profile (not in the default set): for the through and secret paths,
#  - counts per request over exactly PROFILE_N sequential keep-alive requests (tlsload latency): perf stat of
#    the gateway (task-clock, context switches, migrations, page faults, and libc's malloc/calloc/realloc
#    through uprobes made for this run and removed at exit), then strace -c -f for the system calls by name;
#  - perf record -g of the gateway under the keep-alive load (wrk -t2 -c64), its top entries.
PROFILE_N=${BENCH_PROFILE_N:-2000}
PROBES=()
profile_cleanup() { local e; for e in "${PROBES[@]}"; do perf probe -q -d "$e" 2>/dev/null; done; PROBES=(); }
if want profile && [[ $PATHS == *through* ]]; then
	command -v perf >/dev/null 2>&1 && command -v strace >/dev/null 2>&1 || die "profile needs perf and strace"
	LIBC=$(ldd "$SLUICE" | awk '/libc\.so/ { print $3 }')
	PEV=
	for fn in malloc calloc realloc; do
		if perf probe -q -x "$LIBC" -a "sbb${ID}_$fn=$fn" 2>/dev/null; then
			PROBES+=("probe_libc:sbb${ID}_$fn"); PEV="${PEV:+$PEV,}probe_libc:sbb${ID}_$fn"
		fi
	done
	trap 'profile_cleanup; cleanup' EXIT
	for p in through secret; do
		BH=$(path_header "$p")
		# first the clock and the scheduler without probes (a uprobe hit costs microseconds), then the allocations
		for pass in clock alloc; do
			ev="task-clock,context-switches,cpu-migrations,page-faults"
			[ "$pass" = alloc ] && ev=$PEV
			[ -n "$ev" ] || continue
			log "profile $p: perf stat ($pass) over $PROFILE_N sequential requests"
			perf stat -x, -e "$ev" -p "$GW_PID" -o "$DIR/perfstat-$p-$pass.csv" &
			PS=$!; sleep 0.5
			in_ns "$CA_THROUGH" timeout -k 5 120 "$TL" latency -a "${P_ADDR[through]}" -p "${P_PORT[through]}" \
			    -n "$NAME" -c "$CA_THROUGH" -d 100 -N "$PROFILE_N" ${BH:+-H "$BH"} >"$DIR/prof-$p-$pass.out" 2>&1 || true
			sleep 0.2; kill -INT "$PS" 2>/dev/null; wait "$PS" 2>/dev/null || true
		done
		log "profile $p: strace -c -f over $PROFILE_N sequential requests"
		strace -c -f -q -p "$GW_PID" -o "$DIR/strace-$p.txt" &
		PS=$!; sleep 0.5
		in_ns "$CA_THROUGH" timeout -k 5 300 "$TL" latency -a "${P_ADDR[through]}" -p "${P_PORT[through]}" -n "$NAME" \
		    -c "$CA_THROUGH" -d 250 -N "$PROFILE_N" ${BH:+-H "$BH"} >"$DIR/prof-strace-$p.out" 2>&1 || true
		sleep 0.2; kill -INT "$PS" 2>/dev/null; wait "$PS" 2>/dev/null || true
		log "profile $p: perf record -g under wrk -t$KA_THREADS -c$KA_CONNS for ${DUR}s"
		perf record -q -F 999 -g -p "$GW_PID" -o "$DIR/perf-$p.data" -- sleep "$DUR" >/dev/null 2>&1 &
		PS=$!
		in_ns "$CA_THROUGH" timeout -k 5 $((DUR + 30)) wrk -t"$KA_THREADS" -c"$KA_CONNS" -d"${DUR}s" --timeout 5s \
		    -s "$DIR/report.lua" ${BH:+-H "$BH"} "${P_URL[through]}/small" >"$DIR/prof-wrk-$p.out" 2>&1 || true
		wait "$PS" 2>/dev/null || true
		perf report -i "$DIR/perf-$p.data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null |
		    awk '/^ +[0-9.]+%/ && n < 20 { print; n++ }' >"$DIR/perf-top-$p.txt" || true
		perf report -i "$DIR/perf-$p.data" --no-children --sort dso --stdio -g none 2>/dev/null |
		    awk '/^ +[0-9.]+%/ && n < 8 { print; n++ }' >"$DIR/perf-dso-$p.txt" || true
	done
	BH=
	profile_cleanup
	trap cleanup EXIT
fi
profile_report() { # path -> the markdown of its profile
	local p=$1 n
	local pass
	echo "Profile, $p (rev $REV): counts per request over $PROFILE_N sequential keep-alive requests (perf stat of the"
	echo "gateway; the allocations counted in a second pass, with uprobes on libc's malloc, calloc and realloc):"
	echo
	echo "| event | total | per request |"
	echo "|---|---|---|"
	for pass in clock alloc; do
		[ -s "$DIR/perfstat-$p-$pass.csv" ] || continue
		n=$(kv "$(grep 'requests=' "$DIR/prof-$p-$pass.out" | tail -1)" requests)
		awk -F, -v n="${n:-0}" '$1 ~ /^[0-9.]+$/ && n > 0 {
		    ev = $3; sub(/^probe_libc:sbb[0-9]+_/, "", ev); if (ev == "task-clock") { u = " ms" } else { u = "" }
		    printf "| %s | %s%s | %.2f%s |\n", ev, $1, u, $1 / n * (ev == "task-clock" ? 1000 : 1), (ev == "task-clock" ? " us" : "") }' \
		    "$DIR/perfstat-$p-$pass.csv"
	done
	n=$(kv "$(grep 'requests=' "$DIR/prof-strace-$p.out" | tail -1)" requests)
	echo
	echo "System calls per request (strace -c -f over ${n:-?} sequential requests; strace slows the gateway, the counts are exact):"
	echo
	echo "| syscall | calls | per request | errors |"
	echo "|---|---|---|---|"
	awk -v n="${n:-0}" '$NF != "total" && $0 ~ /^ *[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+/ && n > 0 {
	    err = (NF == 6) ? $5 : 0; printf "| %s | %s | %.2f | %s |\n", $NF, $4, $4 / n, err }' "$DIR/strace-$p.txt"
	echo
	echo "Top of perf record -g (self time) under wrk -t$KA_THREADS -c$KA_CONNS, by library:"
	echo
	echo '```'
	cat "$DIR/perf-dso-$p.txt"
	echo
	cat "$DIR/perf-top-$p.txt"
	echo '```'
	echo
}
