#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# run_upstream.sh: libfabric's own fabtests (1.17 from
# ../shared/ext/fabtests-1.17.0.tar.gz; 2.1 in the Debian 13 pass) run
# through pmemverbs as through tcp, over 127.0.0.1: fi_rma_bw on RDM (write,
# read, writedata; several sizes, with and without FI_DELIVERY_COMPLETE)
# and on MSG endpoints, fi_rma_pingpong where the release has it (not
# 1.17), and fi_ubertest with the RDM RMA set of
# test_configs/ofi_rxm/tcp.test (see test/fabtests/README.md).
# fabtests is built once into a cache directory named after the tarball's
# sha256 (rebuilt only when missing; a build failure is a FAIL, never a
# skip).  Each case runs through pmemverbs (FI_PROVIDER_PATH=BUILD_DIR/.libs
# FI_PROVIDER=pmemverbs), and a case that fails there through tcp too
# (FI_PROVIDER=tcp, the reference): PASS when pmemverbs passes, or when it
# fails exactly as tcp does (printed as "PASS ...: SKIP-as-core: ..." with
# the reason); FAIL when it fails where tcp passes.  The last line is
# "N passed, N failed".
#
# usage: test/fabtests/run_upstream.sh BUILD_DIR [PORT_BASE]
#        (default 30500; uses PORT_BASE .. PORT_BASE+99 on 127.0.0.1)
# environment: PMV_FABTESTS_TARBALL  the fabtests release to build
#                                    (default ../shared/ext/fabtests-1.17.0.tar.gz)
#              PMV_FABTESTS_CACHE    where it is built (default /var/cache/pmemverbs)
#              PMV_FABTESTS_TIMEOUT  seconds per process (default 60)
#              PMV_FABTESTS_UBER_TIMEOUT  the same for fi_ubertest, which
#                                    runs its whole series in one pair
#                                    (default 300; 27-46 s at load 8)
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# report
. "$ROOT/test/common/pmv_suite.sh"

if [[ $# -lt 1 || $# -gt 2 ]]; then
	sed -n '/^# usage:/,/^#  *(default/p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
fi
BUILD=$(cd "$1" && pwd)
PORT=${2:-30500}
TARBALL=${PMV_FABTESTS_TARBALL:-$(pmv_ext_file fabtests-1.17.0.tar.gz "$ROOT")}
CACHE_BASE=${PMV_FABTESTS_CACHE:-/var/cache/pmemverbs}
PROC_TIMEOUT=${PMV_FABTESTS_TIMEOUT:-60}
UBER_TIMEOUT=${PMV_FABTESTS_UBER_TIMEOUT:-300}
ADDR=127.0.0.1
LISTEN_POLLS=100 # x 0.1 s waiting for the server to listen
UBER=""          # set while fi_ubertest runs: its counts are read
SUMMARY=""
WORK=$(mktemp -d)
passed=0
failed=0
START=$SECONDS
trap 'rm -rf "$WORK"' EXIT

# Prints the total and the time taken, and exits 0 only if nothing failed.
finish() {
	echo "(upstream fabtests: $((SECONDS - START)) s)"
	echo "$passed passed, $failed failed"
	[[ $failed -eq 0 ]]
	exit
}

# Builds fabtests into FT_DIR (CACHE_BASE/NAME-SHA) unless it holds a
# finished build; one build at a time (a lock beside the directory).
build_fabtests() {
	local name sha t0=$SECONDS
	if [[ -z $TARBALL ]]; then # not on this machine: said, not failed
		echo "SKIP upstream fabtests: fabtests-1.17.0.tar.gz is not on this machine (\$PMV_EXT_DIR, ../shared/ext, /work/shared/ext)"
		finish
	fi
	[[ -f $TARBALL ]] || { report FAIL fabtests-build "no $TARBALL"; finish; }
	name=$(basename "$TARBALL" .tar.gz)
	sha=$(sha256sum "$TARBALL" | cut -c1-16)
	FT_DIR=$CACHE_BASE/$name-$sha
	mkdir -p "$CACHE_BASE"
	exec 9>"$FT_DIR.lock"
	flock -w 3600 9 || { report FAIL fabtests-build "$FT_DIR.lock held for an hour"; finish; }
	if [[ -f $FT_DIR/.pmv-built ]]; then
		echo "fabtests: cached build $FT_DIR"
		return
	fi
	echo "fabtests: building $name into $FT_DIR (autogen, configure, make install)"
	rm -rf "$FT_DIR"
	mkdir -p "$FT_DIR/src"
	if ! (tar xzf "$TARBALL" -C "$FT_DIR/src" --strip-components=1 &&
	      cd "$FT_DIR/src" && nice ./autogen.sh &&
	      nice ./configure --prefix="$FT_DIR/inst" &&
	      nice make -j2 install) >"$FT_DIR/build.log" 2>&1; then
		report FAIL fabtests-build "see $FT_DIR/build.log: $(tail -n 3 "$FT_DIR/build.log" | tr '\n' ' ')"
		finish
	fi
	touch "$FT_DIR/.pmv-built"
	echo "fabtests: built in $((SECONDS - t0)) s"
}

# The environment that selects provider PROV (tcp or pmemverbs).
prov_env() {
	if [[ $1 == pmemverbs ]]; then
		echo "FI_PROVIDER_PATH=$BUILD/.libs FI_PROVIDER=pmemverbs"
	else
		echo "-u FI_PROVIDER_PATH FI_PROVIDER=$1"
	fi
}

# Waits until something listens on TCP port $1 or process $2 has ended.
wait_listen() {
	local i
	for ((i = 0; i < LISTEN_POLLS; i++)); do
		[[ -n $(ss -Hltn "sport = :$1" 2>/dev/null) ]] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# The first line of FILE that says what went wrong, provider names masked
# (so that tcp's and pmemverbs's failures compare), or nothing.
error_line() {
	grep -a -m 1 -iE 'error|fail|ret=|abort|assert|denied|refused|timed out' "$1" |
		sed -E 's/pmemverbs|tcp/PROV/g; s/0x[0-9a-f]+/ADDR/g' | cut -c1-200
}

# fi_ubertest's counts (the client's "Success: N" ... lines) on one line.
uber_summary() {
	grep -a -E '^(Success|Skipped|ENODATA|ENOSYS|EIO|ERROR) *:' "$1" |
		tr -s ' ' | tr '\n' ',' | sed 's/,$//; s/,/, /g'
}

# Runs one server/client pair through PROV; OK=yes, or OK="" and WHY says
# how it failed.  run_pair PROV PORT SERVER_CMD... -- CLIENT_CMD...
run_pair() {
	local prov=$1 port=$2 scmd=() spid src crc=0 envs tmo=$PROC_TIMEOUT
	shift 2
	[[ -n $UBER ]] && tmo=$UBER_TIMEOUT
	while [[ $1 != -- ]]; do scmd+=("$1"); shift; done
	shift
	read -ra envs <<<"$(prov_env "$prov")"
	rm -f "$WORK/c.out"
	env "${envs[@]}" timeout "$tmo" "${scmd[@]}" >"$WORK/s.out" 2>&1 &
	spid=$!
	if ! wait_listen "$port" "$spid"; then
		kill "$spid" 2>/dev/null
		wait "$spid"
		src=$?
		OK="" WHY="the server did not listen (exit $src): $(error_line "$WORK/s.out")"
		keep_output "$prov"
		return
	fi
	env "${envs[@]}" timeout "$tmo" "$@" >"$WORK/c.out" 2>&1 || crc=$?
	[[ $crc -ne 0 ]] && kill "$spid" 2>/dev/null
	wait "$spid"
	src=$?
	SUMMARY=""
	[[ -n $UBER ]] && SUMMARY=$(uber_summary "$WORK/c.out")
	if [[ $crc -eq 0 && $src -eq 0 ]]; then
		OK=yes WHY=""
		[[ -z $UBER || $SUMMARY =~ Success:\ [1-9] ]] && return
		WHY="fi_ubertest exited 0 but no test succeeded ($SUMMARY)"
	else
		WHY="client exit $crc, server exit $src"
	fi
	OK=""
	[[ $src -eq 124 ]] && WHY="$WHY (server timed out after $tmo s)"
	[[ $crc -eq 124 ]] && WHY="$WHY (client timed out after $tmo s)"
	WHY="$WHY: client: $(error_line "$WORK/c.out") | server: $(error_line "$WORK/s.out")"
	keep_output "$prov"
}

# Keeps the last failed run's output through PROV for the report.
keep_output() {
	cp "$WORK/s.out" "$WORK/last-$1-server.out"
	if [[ -f $WORK/c.out ]]; then
		mv "$WORK/c.out" "$WORK/last-$1-client.out"
	else
		: >"$WORK/last-$1-client.out"
	fi
}

# One case through pmemverbs and its verdict; a case that fails there runs
# through tcp too, which decides whether it fails the same way without
# pmemverbs.
# judge NAME PORTS_USED SERVER_ARGS... -- CLIENT_ARGS...  ("@PORT" and
# "@PORT1" in the arguments become this case's first and second port)
judge() {
	local name=$1 nports=$2 prov tcp_ok tcp_why pv_ok pv_why args
	shift 2
	for prov in pmemverbs tcp; do
		args=("${@//@PORT1/$((PORT + 1))}")
		args=("${args[@]//@PORT/$PORT}")
		run_pair "$prov" "$PORT" "${args[@]}"
		PORT=$((PORT + nports))
		if [[ $prov == pmemverbs ]]; then
			pv_ok=$OK pv_why=$WHY
			[[ -n $OK ]] && break
		else
			tcp_ok=$OK tcp_why=$WHY
		fi
	done
	if [[ -n $pv_ok ]]; then
		report PASS "$name" "$SUMMARY"
	elif [[ -z $tcp_ok && $pv_why == "$tcp_why" ]]; then
		report PASS "$name" "SKIP-as-core: tcp fails it the same way ($pv_why)"
	else
		[[ -n $tcp_ok ]] && tcp_why=passes
		report FAIL "$name" "pmemverbs: $pv_why; tcp: $tcp_why"
		sed 's/^/  client| /' "$WORK/last-pmemverbs-client.out" | tail -n 8
		sed 's/^/  server| /' "$WORK/last-pmemverbs-server.out" | tail -n 8
	fi
}

# fi_rma_bw EP OP SIZE [EXTRA...]: data checked (-v), 200 iterations.
rma_bw() {
	local ep=$1 op=$2 size=$3 bin=$FT_DIR/inst/bin/fi_rma_bw
	shift 3
	judge "fi_rma_bw -e $ep -o $op -S $size${*:+ $*}" 1 \
		"$bin" -e "$ep" -o "$op" -S "$size" -I 200 -v "$@" -s "$ADDR" -B @PORT -- \
		"$bin" -e "$ep" -o "$op" -S "$size" -I 200 -v "$@" -P @PORT "$ADDR"
}

# fi_rma_pingpong EP OP (write or writedata), 4 KiB, data checked (-v).
rma_pingpong() {
	local ep=$1 op=$2 bin=$FT_DIR/inst/bin/fi_rma_pingpong
	judge "fi_rma_pingpong -e $ep -o $op -S 4096" 1 \
		"$bin" -e "$ep" -o "$op" -S 4096 -I 200 -v -s "$ADDR" -B @PORT -- \
		"$bin" -e "$ep" -o "$op" -S 4096 -I 200 -v -P @PORT "$ADDR"
}

# The RDM RMA block of ofi_rxm/tcp.test with its completions of kind COMP
# (FT_COMP_QUEUE or FT_COMP_CNTR) only and no provider name (FI_PROVIDER
# chooses), written to FILE; status 2 if the block lists no COMP.
rdm_rma_config() {
	local comp=$1 file=$2
	awk '
		/^{/ { blk = ""; inblk = 1 }
		inblk { blk = blk $0 "\n" }
		/^},?$/ && inblk {
			inblk = 0
			if (blk ~ /FT_CAP_RMA/ && blk ~ /FI_EP_RDM/) printf "%s", blk
		}' "$FT_DIR/src/test_configs/ofi_rxm/tcp.test" |
		grep -v 'prov_name' >"$file.tmp"
	grep -q "$comp" "$file.tmp" || { rm -f "$file.tmp"; return 2; }
	grep -vE '^\s*FT_COMP_(QUEUE|CNTR),?\s*$' "$file.tmp" >"$file.blk"
	mv "$file.blk" "$file.tmp"
	# the comp_type list keeps COMP alone
	sed "s/comp_type: \[/comp_type: [\n\t\t$comp,/" "$file.tmp" >"$file"
	rm -f "$file.tmp"
	grep -q FT_CAP_RMA "$file"
}

# fi_ubertest on the RDM RMA set with COMP completions.
ubertest() {
	local comp=$1 cfg=$WORK/rdm_rma_${1,,}.test bin=$FT_DIR/inst/bin/fi_ubertest
	rdm_rma_config "$comp" "$cfg"
	case $? in
	0) ;;
	2) echo "(fi_ubertest RDM RMA $comp: not in this release's test_configs/ofi_rxm/tcp.test)"
	   return ;;
	*) report FAIL "fi_ubertest RDM RMA $comp" "no RDM RMA block in test_configs/ofi_rxm/tcp.test"
	   return ;;
	esac
	UBER=yes
	judge "fi_ubertest RDM RMA ($comp, test_configs/ofi_rxm/tcp.test)" 2 \
		"$bin" -x -q @PORT -s "$ADDR" -B @PORT1 -- \
		"$bin" -q @PORT -u "$cfg" -P @PORT1 "$ADDR"
	UBER=""
}

build_fabtests
echo "upstream fabtests $(basename "$FT_DIR"): tcp (reference) and pmemverbs ($BUILD/.libs), $ADDR, ports from $PORT"
[[ -x $FT_DIR/inst/bin/fi_rma_pingpong ]] ||
	echo "(no fi_rma_pingpong in this release: not run)"
for op in write read writedata; do
	for size in 64 65536 1048576; do
		rma_bw rdm "$op" "$size"
	done
	rma_bw rdm "$op" 4096 -U
done
for op in write read writedata; do
	for size in 64 1048576; do
		rma_bw msg "$op" "$size"
	done
done
if [[ -x $FT_DIR/inst/bin/fi_rma_pingpong ]]; then
	for ep in rdm msg; do
		for op in write writedata; do
			rma_pingpong "$ep" "$op"
		done
	done
fi
ubertest FT_COMP_QUEUE
ubertest FT_COMP_CNTR
finish
