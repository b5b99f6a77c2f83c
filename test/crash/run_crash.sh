#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Crash loop and target restart (issue 11 items 2 and 3), over the tcp core
# on 127.0.0.1.  For each profile (page, cache_line, byte: PAGE, DMP, MHP
# through PMEM2_FORCE_GRANULARITY) and append mode (singleton, compound),
# cycles of: a target process on the same log file (it first recovers and
# verifies the log against every ACK so far), an initiator that continues
# the log, SIGKILL of the target after a random delay (commits in flight),
# the initiator reporting its errors and exiting.  Every few cycles the
# restarted target is also probed with the old process's region key and
# inbox key (pmv_crashlog learn / stale): they must be refused.  Streams
# ending in :rdm append through FI_EP_RDM endpoints (pmemverbs;ofi_rxm,
# pmv_crashlog -e rdm): the initiator's hellos are resent until the new
# target answers; in the cycles where MSG streams probe the restarted
# target (MSG only), the RDM initiator stays (-R 1) and appends to the next
# cycle's target through the same endpoint (ofi_rxm reconnects).
#
# usage: run_crash.sh BUILD_DIR [PORT_BASE]
#   BUILD_DIR  a build tree (pmv_crashlog in test/crash, the plugin in .libs)
#   PORT_BASE  first TCP port (default 12000); uses up to PORT_BASE + 8 * JOBS
# env:
#   PMV_CRASH_CYCLES        cycles over all the streams (default 240)
#   PMV_CRASH_KILL_MS       "MIN MAX" delay of the kill after the initiator
#                           started appending (default "2 100")
#   PMV_CRASH_RESTART_EVERY the restart probe every N cycles (default 10)
#   PMV_CRASH_UNSAFE        early|visible: a deliberately wrong initiator
#                           (test of the test: early must FAIL here)
#   PMV_CRASH_STREAMS       the streams (PROFILE:MODE[:rdm]), default
#                           "page:singleton page:compound
#                           cache_line:singleton cache_line:compound
#                           byte:singleton byte:compound" and the same six
#                           with :rdm
#   PMV_CRASH_JOBS          streams run at once (default 2; ports
#                           PORT_BASE + 8 * job + stream)
#   PMV_CRASH_KEEP=1        keep the work directory (kept anyway after a
#                           failure, with the processes' outputs)
# Prints PASS|FAIL lines (one per cycle and per restart check), INFO lines,
# the totals, and as its last line "N passed, N failed".
set -u

if [[ $# -lt 1 || $# -gt 2 || ! -d $1 ]]; then
	sed -n '16,36p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
fi
BUILD=$(cd "$1" && pwd)
BIN=$BUILD/test/crash/pmv_crashlog
PORT_BASE=${2:-12000}
export FI_PROVIDER_PATH=${PMV_PLUGIN_DIR:-$BUILD/.libs}
unset FI_PROVIDER FI_PMEMVERBS_CORE_PROV FI_PMEMVERBS_METHOD
CYCLES=${PMV_CRASH_CYCLES:-240}
read -r KILL_MIN KILL_MAX <<<"${PMV_CRASH_KILL_MS:-2 100}"
RESTART_EVERY=${PMV_CRASH_RESTART_EVERY:-10}
UNSAFE=${PMV_CRASH_UNSAFE:-}
CAPACITY=$((128 << 20))
MAXREC=262144             # records of up to 256 KiB: kills land inside them
REINIT_LEFT=$((48 << 20)) # a new log when less is left (a cycle may fill it)
EXIT_BOUND_MS=15000       # the initiator must be gone this soon after the kill
DEFAULT_STREAMS="page:singleton page:compound cache_line:singleton cache_line:compound byte:singleton byte:compound"
DEFAULT_STREAMS+=" ${DEFAULT_STREAMS// /:rdm }:rdm"
read -r -a STREAMS <<<"${PMV_CRASH_STREAMS:-$DEFAULT_STREAMS}"
ADDR=127.0.0.1

# The logs live in the page cache either way (SIGKILL keeps it); /dev/shm
# spares the disk the 128 MiB of each new log.
SCRATCH=${TMPDIR:-/tmp}
[[ -d /dev/shm && -w /dev/shm ]] && SCRATCH=/dev/shm
WORK=$(mktemp -d "$SCRATCH/pmv_crash.XXXXXX")
passed=0
failed=0
job_pids=()
# totals
t_cycles=0 t_acked=0 t_checks=0 t_lost=0 t_torn=0 t_unpub=0 t_beyond=0
t_logs=0 t_errors=0 t_exit_ms=0 t_exit_max=0 t_reconn=0

# Sends a signal to each pid that is still a child of this shell (never
# to a process that took over the pid of one that ended).
kill_child() {
	local sig=$1 pid
	shift
	for pid in "$@"; do
		[[ -n $pid && $(ps -o ppid= -p "$pid" 2>/dev/null) -eq $$ ]] &&
			kill "-$sig" "$pid" 2>/dev/null
	done
	return 0
}

cleanup() {
	kill_child KILL "${tpid:-}" "${ipid:-}" "${demo_pid:-}" "${job_pids[@]}"
	if [[ ${PMV_CRASH_KEEP:-0} == 1 || $failed -gt 0 ]]; then
		echo "work directory kept: $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

pass() { echo "PASS $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); keep_outputs; }

# Keeps the outputs of the current cycle's processes for a failure.
keep_outputs() {
	local f dir=$WORK/failure-$failed
	mkdir -p "$dir"
	for f in t.out t.err i.out i.err l.err v.err; do
		[[ -f $WORK/$f ]] && cp "$WORK/$f" "$dir/"
	done
	echo "  (outputs kept in $dir)"
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Waits up to ms for a line matching pattern in file.
await_line() {
	local file=$1 pattern=$2 ms=$3 end
	end=$(($(now_ms) + ms))
	while (($(now_ms) < end)); do
		grep -q -- "$pattern" "$file" 2>/dev/null && return 0
		sleep 0.005
	done
	return 1
}

# Field after word in a line ("... word VALUE ..."); num: 0 if absent.
field() { sed -n "s/.* $2 \([^ ]*\).*/\1/p" <<<"$1" | head -n 1; }
num() { local v; v=$(field "$1" "$2"); echo "${v:-0}"; }

# Starts a new log for the stream (a fresh file, a fresh ACK file).
new_log() {
	logs_made=$((logs_made + 1))
	acks=$WORK/$name.acks.$logs_made
	rm -f "$WORK/$name.info" # keys learned from the old log's target
	: >"$acks"
	"$BIN" init -f "$file" -m "$mode" -c $CAPACITY -M $MAXREC >/dev/null ||
		{ fail "crash-$name: init of $file failed"; return 1; }
	t_logs=$((t_logs + 1))
}

# Counts a VERIFY line into the totals; returns 1 if it failed.
count_verify() {
	local v=$1
	t_checks=$((t_checks + $(num "$v" verified)))
	t_lost=$((t_lost + $(num "$v" lost)))
	t_torn=$((t_torn + $(num "$v" torn_rejected)))
	t_unpub=$((t_unpub + $(num "$v" unpublished)))
	t_beyond=$((t_beyond + $(num "$v" beyond)))
	last_left=$(num "$v" left)
	[[ $v == "VERIFY "*" ok "* ]]
}

# Reports the cycle whose results a VERIFY line (or its absence) judges.
judge_cycle() {
	local v=$1
	[[ -n $pending ]] || return 0
	if [[ -z $v ]]; then
		fail "$pending: no VERIFY line: $(tail -n 2 "$WORK/t.err" "$WORK/v.err" 2>/dev/null | tr '\n' ' ')"
	elif count_verify "$v" && [[ -z $pending_why ]]; then
		pass "$pending: $pending_what; log: $(field "$v" records) records, $(field "$v" verified) acked verified, lost $(field "$v" lost), torn rejected $(field "$v" torn_rejected)"
	else
		fail "$pending: ${pending_why:-verification failed}: $v"
	fi
	pending=""
	pending_why=""
}

# Starts the target of a cycle (it verifies first); sets tpid.
start_target() {
	local marker_args=()
	[[ -n $marker ]] && marker_args=(-x "$marker")
	# no old output may answer await_line before the new process writes
	rm -f "$WORK/t.out" "$WORK/t.err" "$WORK/v.err" "$WORK/l.err"
	[[ -n $carry ]] || rm -f "$WORK/i.out" "$WORK/i.err"
	PMEM2_FORCE_GRANULARITY=$gran "$BIN" target -f "$file" -a $ADDR \
		-P "$port" -t 300 -A "$acks" -N "$name" "${marker_args[@]}" \
		-e "$ep" \
		>"$WORK/t.out" 2>"$WORK/t.err" &
	tpid=$!
	disown "$tpid" # killed on purpose: no "Killed" notice
	marker=""
}

# The restart probe: the old process's keys must be refused by this one.
restart_probe() {
	local out
	marker=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	out=$(timeout 120 "$BIN" stale -a $ADDR -P "$port" -i "$WORK/$name.info" \
	      -x "$marker" 2>&1)
	while IFS= read -r line; do
		case $line in
		PASS*) pass "${line#PASS } [$name, cycle $cycle]" ;;
		FAIL*) fail "${line#FAIL } [$name, cycle $cycle]" ;;
		esac
	done <<<"$out"
	grep -q '^PASS restart-new-key-commit' <<<"$out" ||
		fail "restart-probe [$name, cycle $cycle]: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
	restarts=$((restarts + 1))
}

# Starts the initiator of a cycle (sets ipid), unless the previous one
# carries on (RDM, -R 1: it reconnects to this cycle's target).
start_initiator() {
	local again=()
	[[ -n $carry ]] && return
	i_part=1 i_taken=0 i_left=0
	if [[ $ep == rdm ]] && ((cycle % RESTART_EVERY == 0 && cycle < ncycles)); then
		i_left=1
		again=(-R 1)
	fi
	FI_PMEMVERBS_PEER_TIMEOUT_MS=3000 "$BIN" append -a $ADDR -P "$port" \
		-t 60 -e "$ep" "${again[@]}" ${UNSAFE:+-u "$UNSAFE"} \
		>"$WORK/i.out" 2>"$WORK/i.err" &
	ipid=$!
}

# Whether file has at least n lines matching pattern.
has_lines() {
	local n
	n=$(grep -c -a -- "$2" "$1" 2>/dev/null)
	((${n:-0} >= $3))
}

# Waits up to ms for the n-th line matching pattern in file.
await_lines() {
	local file=$1 pattern=$2 n=$3 ms=$4 end
	end=$(($(now_ms) + ms))
	while (($(now_ms) < end)); do
		has_lines "$file" "$pattern" "$n" && return 0
		sleep 0.005
	done
	return 1
}

# Waits for the target's READY and judges the previous cycle by its VERIFY
# line; false (the cycle is over) if the target did not start.
target_ready() {
	local v
	if await_line "$WORK/t.out" '^READY' 30000; then
		judge_cycle "$(grep -a '^VERIFY' "$WORK/t.out")"
		return 0
	fi
	v=$(grep -a '^VERIFY' "$WORK/t.out")
	judge_cycle "$v"
	kill_child KILL "$tpid" "${ipid:-}"
	[[ -n ${ipid:-} ]] && wait "$ipid" 2>/dev/null
	ipid="" carry=""
	if [[ -n $v && $v != *" ok "* ]]; then
		new_log && again=yes # judged above; the cycle on a new log
	else
		fail "crash-$name-c$cycle: the target did not start: $(tail -n 2 "$WORK/t.err" | tr '\n' ' ')"
	fi
	return 1
}

# The restart probe of this cycle (keys learned in the previous one), and
# the learning of this target's keys for the next; the target is READY.
restart_steps() {
	if [[ -f $WORK/$name.info ]]; then
		restart_probe
		rm -f "$WORK/$name.info"
	fi
	if ((cycle % RESTART_EVERY == 0)); then
		timeout 60 "$BIN" learn -a $ADDR -P "$port" -i "$WORK/$name.info" \
			>/dev/null 2>"$WORK/l.err" ||
			fail "restart-learn [$name, cycle $cycle]: $(tail -n 1 "$WORK/l.err")"
	fi
}

# Kills the target a random delay after the initiator's START and waits
# (bounded) for the initiator to end; sets delay and exit_ms.
kill_and_wait() {
	local t_kill
	if ! await_lines "$WORK/i.out" '^START' "$i_part" 30000; then
		pending_why="the initiator did not start${carry:+ again (RDM reconnection)}: $(tail -n 2 "$WORK/i.err" | tr '\n' ' ')"
	fi
	delay=$((KILL_MIN + RANDOM % (KILL_MAX - KILL_MIN + 1)))
	sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
	if ! kill -0 "$ipid" 2>/dev/null && ! grep -q '^END full' "$WORK/i.out"; then
		pending_why=${pending_why:-"the initiator ended before the kill: $(grep '^END' "$WORK/i.out")"}
	fi
	kill_child KILL "$tpid"
	t_kill=$(now_ms)
	while kill -0 "$ipid" 2>/dev/null && (($(now_ms) - t_kill < EXIT_BOUND_MS)); do
		((i_left > 0)) && has_lines "$WORK/i.out" '^END' "$i_part" && break
		sleep 0.005
	done
	exit_ms=$(($(now_ms) - t_kill))
	carry=""
	if ((i_left > 0)) && kill -0 "$ipid" 2>/dev/null &&
		has_lines "$WORK/i.out" '^END' "$i_part"; then
		carry=yes # it waits for the next cycle's target
		i_left=$((i_left - 1)) i_part=$((i_part + 1))
	elif kill -0 "$ipid" 2>/dev/null; then
		pending_why=${pending_why:-"the initiator still runs ${EXIT_BOUND_MS} ms after the kill (a hang)"}
		kill_child KILL "$ipid"
	elif ((i_left > 0)) && ! grep -q '^END full' "$WORK/i.out"; then
		pending_why=${pending_why:-"the RDM initiator (-R 1) exited instead of waiting for the next target: $(tail -n 1 "$WORK/i.err")"}
	fi
}

# One cycle: target (it verifies the previous cycle), initiator (started
# at once unless the restart steps need the target first), kill, the
# initiator's end.
run_cycle() {
	local delay exit_ms end_line rc restart="" again=yes endn state
	[[ -n $carry ]] || ipid="" # a carried RDM initiator goes on
	[[ -f $WORK/$name.info ]] || ((cycle % RESTART_EVERY == 0)) && restart=yes
	[[ $ep == rdm ]] && restart="" # learn and stale speak MSG only
	while [[ -n $again ]]; do
		again=""
		start_target
		[[ -z $restart ]] && start_initiator
		if target_ready; then
			break
		fi
		[[ -n $again ]] || return
	done
	[[ -n $restart ]] && { restart_steps; start_initiator; }
	pending="crash-$name-c$cycle"
	pending_why=""
	t_cycles=$((t_cycles + 1))
	if [[ -n $carry ]]; then
		pending_what_re=" (the initiator of the previous cycle, reconnected over RDM)"
		t_reconn=$((t_reconn + 1))
	fi
	kill_and_wait
	rc=0
	[[ -n $carry ]] || { wait "$ipid"; rc=$?; }
	endn=$i_part state=out
	[[ -n $carry ]] && endn=$((i_part - 1)) state=waiting
	end_line=$(grep -a '^END' "$WORK/i.out" | sed -n "${endn}p")
	if [[ -z $pending_why && ($rc -ne 0 || -z $end_line || $end_line == *violation*) ]]; then
		pending_why="the initiator exited $rc: ${end_line:-no END line} $(tail -n 2 "$WORK/i.err" | tr '\n' ' ')"
	fi
	grep -a '^ACK ' "$WORK/i.out" | tail -n +$((i_taken + 1)) >"$WORK/i.acks"
	cat "$WORK/i.acks" >>"$acks"
	i_taken=$((i_taken + $(grep -c '^ACK ' "$WORK/i.acks")))
	t_acked=$((t_acked + $(grep -c '^ACK ' "$WORK/i.acks")))
	t_errors=$((t_errors + $(num "$end_line" errors)))
	t_exit_ms=$((t_exit_ms + exit_ms))
	((exit_ms > t_exit_max)) && t_exit_max=$exit_ms
	pending_what="killed ${delay} ms after START$pending_what_re, $(grep -c '^ACK ' "$WORK/i.acks") appends acked then, initiator $state ${exit_ms} ms after the kill ($(sed -n 's/.* first: \([^-]*\).*/\1/p' <<<"$end_line" | head -c 60))"
	if [[ $end_line == *" full "* ]] || ((last_left < REINIT_LEFT)); then
		judge_cycle "$("$BIN" verify -f "$file" -A "$acks" -N "$name" \
			       2>"$WORK/v.err")"
		new_log
	fi
}

# The cycles of one stream (profile:mode[:rdm]).
run_stream() {
	local spec=$1 n=$2 start=$SECONDS
	IFS=: read -r gran mode ep <<<"$spec"
	ep=${ep:-msg}
	name=$gran-$mode
	[[ $ep == rdm ]] && name+=-rdm
	file=$WORK/$name.log
	logs_made=0 pending="" pending_why="" marker="" last_left=$CAPACITY
	carry="" ncycles=$n
	new_log || return
	for ((cycle = 1; cycle <= n; cycle++)); do
		pending_what_re=""
		run_cycle
	done
	judge_cycle "$("$BIN" verify -f "$file" -A "$acks" -N "$name" \
		       ${marker:+-x "$marker"} 2>"$WORK/v.err")"
	echo "(stream $name: $n cycles in $((SECONDS - start)) s)"
	rm -f "$file" "$WORK/$name".acks.*
}

# With the same requested key in both processes (fabtests' fi_pmem_*
# programs ask for key 2), the tcp core cannot refuse the old process's
# key: shown, not counted (INFO lines).
fixed_key_demo() {
	local demo=$WORK/fixed.log out m
	m=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	"$BIN" init -f "$demo" -m singleton -c $((1 << 20)) -M 4096 >/dev/null
	rm -f "$WORK/fa.out" "$WORK/fb.out"
	"$BIN" target -k fixed -f "$demo" -a $ADDR -P "$port" -t 60 \
		>"$WORK/fa.out" 2>&1 &
	demo_pid=$!
	disown "$demo_pid"
	await_line "$WORK/fa.out" '^READY' 30000
	timeout 60 "$BIN" learn -a $ADDR -P "$port" -i "$WORK/fixed.info" >/dev/null
	kill_child KILL "$demo_pid"
	"$BIN" target -k fixed -f "$demo" -a $ADDR -P "$port" -t 60 \
		>"$WORK/fb.out" 2>&1 &
	demo_pid=$!
	disown "$demo_pid"
	await_line "$WORK/fb.out" '^READY' 30000
	out=$(timeout 120 "$BIN" stale -K -a $ADDR -P "$port" \
	      -i "$WORK/fixed.info" -x "$m" 2>&1)
	kill_child KILL "$demo_pid"
	grep '^INFO' <<<"$out" | sed 's/^INFO /INFO fixed-key /'
}

# The totals as one line a parent can add up (CRASH-TOTALS k=v ...).
TOTAL_KEYS=(t_cycles t_logs t_acked t_checks t_lost t_torn t_unpub t_beyond
	    t_errors t_exit_ms t_exit_max restarts t_reconn)

print_machine_totals() {
	local k line="CRASH-TOTALS"
	for k in "${TOTAL_KEYS[@]}"; do line+=" $k=${!k}"; done
	echo "$line"
}

# Adds a child's CRASH-TOTALS line (t_exit_max: the maximum).
add_machine_totals() {
	local kv k v
	for kv in ${1#CRASH-TOTALS }; do
		k=${kv%%=*} v=${kv#*=}
		if [[ $k == t_exit_max ]]; then
			((v > t_exit_max)) && t_exit_max=$v
		else
			printf -v "$k" '%d' $((${!k} + v))
		fi
	done
}

# PMV_CRASH_JOBS copies of this script, each with its share of the
# streams and its own ports, run at once; their outputs, then the sums.
run_parallel() {
	local g i groups=() out last
	for i in "${!STREAMS[@]}"; do
		groups[i % JOBS]+="${STREAMS[$i]} "
	done
	for g in "${!groups[@]}"; do
		read -r -a i <<<"${groups[$g]}"
		PMV_CRASH_CHILD=1 PMV_CRASH_STREAMS="${groups[$g]}" \
		PMV_CRASH_CYCLES=$((per * ${#i[@]})) \
			bash "$0" "$BUILD" $((PORT_BASE + 8 * g)) \
			>"$WORK/job$g.out" 2>"$WORK/job$g.err" &
		job_pids+=($!)
	done
	for g in "${!job_pids[@]}"; do
		wait "${job_pids[$g]}"
		out=$WORK/job$g.out
		grep -v -E '^CRASH-TOTALS|^[0-9]+ passed, [0-9]+ failed$' "$out"
		cat "$WORK/job$g.err"
		add_machine_totals "$(grep '^CRASH-TOTALS' "$out" | tail -n 1)"
		last=$(tail -n 1 "$out")
		if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
			passed=$((passed + BASH_REMATCH[1]))
			failed=$((failed + BASH_REMATCH[2]))
		else
			fail "crash job $g (${groups[$g]}) printed no result line"
		fi
	done
}

start=$SECONDS
per=$(((CYCLES + ${#STREAMS[@]} - 1) / ${#STREAMS[@]}))
restarts=0
JOBS=${PMV_CRASH_JOBS:-2}
if [[ -n ${PMV_CRASH_CHILD:-} ]]; then
	for i in "${!STREAMS[@]}"; do
		port=$((PORT_BASE + i))
		run_stream "${STREAMS[$i]}" "$per"
	done
	print_machine_totals
	echo "$passed passed, $failed failed"
	[[ $failed -eq 0 ]]
	exit
fi
echo "crash loop: ${#STREAMS[@]} streams x $per cycles, kill ${KILL_MIN}-${KILL_MAX} ms after START, $JOBS at a time${UNSAFE:+, UNSAFE initiator: $UNSAFE}"
if ((JOBS > 1 && ${#STREAMS[@]} > 1)); then
	run_parallel
else
	for i in "${!STREAMS[@]}"; do
		port=$((PORT_BASE + i))
		run_stream "${STREAMS[$i]}" "$per"
	done
fi
port=$((PORT_BASE + 8 * JOBS))
fixed_key_demo
echo "crash totals: cycles $t_cycles, logs $t_logs, appends acked $t_acked," \
     "acked records verified $t_checks (each acked record, once per later verification of its log)," \
     "records lost $t_lost, torn records rejected $t_torn, unpublished records $t_unpub," \
     "whole records past the end $t_beyond, initiator errors $t_errors," \
     "initiator exit after the kill: mean $((t_exit_ms / (t_cycles ? t_cycles : 1))) ms, max $t_exit_max ms," \
     "restart probes $restarts, RDM reconnections $t_reconn, $((SECONDS - start)) s"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
