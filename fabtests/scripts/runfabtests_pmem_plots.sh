# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# runfabtests_pmem_plots.sh: the plots of runfabtests_pmem.sh, which
# sources it: plots() draws commit_latency.png, commit_bw.png and
# remotelog.png with gnuplot from the run's CSVs (installing gnuplot-nox
# when root and missing; none without gnuplot).  It uses that script's
# OUT, LOGS, CONFIGS, LAT_*/BW_* settings and the helpers of
# runfabtests_pmem_ratios.sh (lat_p50, bw_of, profile_of, lat_method).

plots() {
	local g p size cfg mode label b f series
	if ! command -v gnuplot >/dev/null && [ "$(id -u)" -eq 0 ] &&
		command -v apt-get >/dev/null; then
		echo "installing gnuplot-nox for the plots" >&2
		timeout -k "$KILL_AFTER" 180 apt-get install -y -q gnuplot-nox \
			>"$LOGS/apt-gnuplot.log" 2>&1 || true
	fi
	command -v gnuplot >/dev/null || {
		echo "gnuplot is missing (apt-get install -y gnuplot-nox): no plots" >&2
		return 0
	}
	local D=$OUT/plotdata
	# latency vs size: per series "size p50" lines
	if [ -s "$OUT/commit_latency.csv" ]; then
		for cfg in $(printf 'pmemverbs/%s ' $CONFIGS) tcp; do
			for mode in commit read8 write write_read; do
				f=$D/lat-${cfg//[\/:]/-}-$mode.dat
				: >"$f"
				for size in $LAT_SIZES; do
					p=$(lat_p50 "$cfg" "$mode" "$size")
					[ -n "$p" ] && echo "$size $p" >>"$f"
				done
			done
		done
		series=""
		for g in $CONFIGS; do
			series+="'$D/lat-pmemverbs-${g//:/-}-commit.dat' using 1:2 with linespoints lw 2 title 'pmemverbs commit, $(profile_of "$g") ($(lat_method "$g"))', "
		done
		# the baselines in dark colours, measured in the DMP runs
		# (pmemverbs) and in the tcp runs
		series+="'$D/lat-tcp-commit.dat' using 1:2 with linespoints lw 2 dt 2 lc rgb '#e69f00' title 'tcp core FI_COMMIT_COMPLETE', "
		series+="'$D/lat-pmemverbs-cache_line-read8.dat' using 1:2 with linespoints lw 2 dt 3 lc rgb '#000000' title '8-byte fi_read (pmemverbs)', "
		series+="'$D/lat-pmemverbs-cache_line-write_read.dat' using 1:2 with linespoints dt 4 lc rgb '#0072b2' title 'fi_write + 8-byte fi_read', "
		series+="'$D/lat-pmemverbs-cache_line-write.dat' using 1:2 with linespoints dt 5 lc rgb '#d55e00' title 'fi_write (no durability)', "
		series+="'$D/lat-tcp-write.dat' using 1:2 with linespoints dt 6 lc rgb '#555555' title 'tcp fi_write'"
		gnuplot <<GP 2>"$LOGS/gnuplot-latency.log"
set terminal pngcairo noenhanced size 1000,600 font ",10"
set output "$OUT/commit_latency.png"
set logscale x 2
set logscale y
set grid
set xlabel "write size (bytes)"
set ylabel "p50 latency (us), median over $LAT_ROUNDS rounds"
set key outside right
set title "Durable commit latency over tcp/127.0.0.1 (fi_pmem_lat)"
plot $series
GP
	fi
	# bandwidth vs size: one panel per configuration
	if [ -s "$OUT/commit_bw.csv" ]; then
		for g in $CONFIGS tcp; do
			p=$(profile_of "$g")
			[ "$g" = tcp ] && p=n/a
			prov=pmemverbs
			[ "$g" = tcp ] && prov=tcp
			for mode in write commit commit_flush core_commit; do
				for b in 0 1 16 mib; do
					f=$D/bw-${g//:/-}-$mode-$b.dat
					: >"$f"
					for size in ${BW_SIZES//,/ }; do
						local bb=$b
						[ "$b" = mib ] && bb=$(((1048576 + size - 1) / size))
						local v
						v=$(bw_of "$prov" "$p" "$mode" "$size" "$bb" mbps)
						[ -n "$v" ] && echo "$size $v" >>"$f"
					done
				done
			done
		done
		{
			echo 'set terminal pngcairo noenhanced size 1900,550 font ",9"'
			echo "set output \"$OUT/commit_bw.png\""
			echo 'set multiplot layout 1,4 title "fi_pmem_bw over tcp/127.0.0.1: MB/s (median), window 64"'
			echo 'set logscale x 2'
			echo 'set logscale y'
			echo 'set grid'
			echo "set xtics ($(echo "${BW_SIZES//,/ }" | tr ' ' '\n' |
				awk '{
					if ($1 >= 1048576) l = ($1 / 1048576) "M"
					else if ($1 >= 1024) l = ($1 / 1024) "K"
					else l = $1
					printf "%s\"%s\" %s", (NR > 1 ? ", " : ""), l, $1
				}'))"
			echo 'set offsets graph 0.05, graph 0.05, 0, 0'
			echo 'set xlabel "write size (bytes)"'
			echo 'set ylabel "MB/s"'
			echo 'set key bottom right font ",8"'
			for g in $CONFIGS; do
				local f=$D/bw-${g//:/-}
				echo "set title \"$(profile_of "$g") ($g)\""
				echo "plot '$f-write-0.dat' u 1:2 w lp lw 2 t 'fi_write', \\"
				echo "  '$f-commit-1.dat' u 1:2 w lp t 'commit every write', \\"
				echo "  '$f-commit-16.dat' u 1:2 w lp t '16 writes/commit', \\"
				echo "  '$f-commit-mib.dat' u 1:2 w lp t '1 commit/MiB', \\"
				echo "  '$f-commit_flush-16.dat' u 1:2 w lp dt 2 t '16 writes + flush', \\"
				echo "  '$f-commit_flush-mib.dat' u 1:2 w lp dt 2 t 'flush/MiB', \\"
				echo "  '$D/bw-tcp-write-0.dat' u 1:2 w lp dt 3 t 'tcp fi_write', \\"
				echo "  '$D/bw-tcp-core_commit-1.dat' u 1:2 w lp dt 3 t 'tcp FI_COMMIT_COMPLETE each'"
			done
			echo 'unset multiplot'
		} | gnuplot 2>"$LOGS/gnuplot-bw.log"
	fi
	# RemoteLog: appends/s and p50 vs record size
	if [ -s "$OUT/remotelog.csv" ]; then
		for g in $CONFIGS tcp; do
			p=$(profile_of "$g")
			[ "$g" = tcp ] && p=n/a
			for mode in singleton compound; do
				awk -F, -v r="$p" -v m="$mode" \
					'NR > 1 && $2 == r && $3 == m {print $4, $10, $6}' \
					"$OUT/remotelog.csv" >"$D/log-${g//:/-}-$mode.dat"
			done
		done
		{
			echo 'set terminal pngcairo noenhanced size 1400,550 font ",9"'
			echo "set output \"$OUT/remotelog.png\""
			echo 'set multiplot layout 1,2 title "RemoteLog (fi_pmem_remotelog) over tcp/127.0.0.1"'
			echo 'set logscale x 2'
			echo 'set grid'
			echo 'set xlabel "record size (bytes, header included)"'
			echo 'set key top right font ",8"'
			for panel in "2:appends/s (sequential durable appends)" \
				"3:p50 append latency (us)"; do
				echo "set ylabel \"${panel#*:}\""
				echo "set title \"${panel#*:}\""
				local line="plot "
				for g in $CONFIGS tcp; do
					for mode in singleton compound; do
						label="$( [ "$g" = tcp ] && echo tcp || echo "$(profile_of "$g")") $mode"
						line+="'$D/log-${g//:/-}-$mode.dat' u 1:${panel%%:*} w lp $([ "$mode" = compound ] && echo 'dt 2') t '$label', "
					done
				done
				echo "${line%, }"
			done
			echo 'unset multiplot'
		} | gnuplot 2>"$LOGS/gnuplot-remotelog.log"
	fi
	ls "$OUT"/*.png 2>/dev/null | sed 's/^/plot: /'
}
