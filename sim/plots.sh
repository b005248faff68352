#!/bin/sh
# sim/plots.sh SLUICE-SIM OUTDIR: draw the window and busy count over time
# of one destination behind the seed's 421 limiter, for the three feedback
# styles (sim/scenarios/limiter-421/{1,3,5}-*-nocache.conf), into
# OUTDIR/window-421.png. Run by "make plots"; needs gnuplot.
set -e
sim=${1:-build/sluice-sim}
out=${2:-doc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v gnuplot >/dev/null || {
    echo "plots.sh: gnuplot is not installed (apt-get install gnuplot-nox)" >&2
    exit 1
}
i=0
for f in sim/scenarios/limiter-421/1-invN-nocache.conf \
    sim/scenarios/limiter-421/3-invsqrtN-nocache.conf \
    sim/scenarios/limiter-421/5-one-nocache.conf; do
    i=$((i + 1))
    "$sim" --trace "$tmp/trace$i.csv" "$f" >"$tmp/table$i"
    # time,window,busy with a step at every change; comments dropped.
    awk -F, 'NR > 1 && !/^#/ { print $2, $4, $5 }' "$tmp/trace$i.csv" \
        >"$tmp/t$i.dat"
    awk '$NF ~ /nocache/ { print $5 }' "$tmp/table$i" >"$tmp/pct$i"
done
cat >"$tmp/plot.gp" <<GP
set terminal pngcairo size 900,780 font "sans,10"
set output "$out/window-421.png"
set multiplot layout 3,1 title "sluice-sim: one destination behind a 421 limiter at 5 connections (first 60 s)"
set xrange [0:60]
set yrange [0:9]
set ytics 1
set grid ytics
set key top right
set ylabel "deliveries"
set title "feedback 1/N: $(cat "$tmp/pct1")% deferred (seed 16.5%)"
plot "$tmp/t1.dat" using 1:2 with steps lw 2 title "window", \
     "$tmp/t1.dat" using 1:3 with steps lw 1 title "busy"
set title "feedback 1/sqrt(N): $(cat "$tmp/pct2")% deferred (seed 24.5%)"
plot "$tmp/t2.dat" using 1:2 with steps lw 2 title "window", \
     "$tmp/t2.dat" using 1:3 with steps lw 1 title "busy"
set title "feedback 1: $(cat "$tmp/pct3")% deferred (seed 49.7%)"
set xlabel "seconds"
plot "$tmp/t3.dat" using 1:2 with steps lw 2 title "window", \
     "$tmp/t3.dat" using 1:3 with steps lw 1 title "busy"
unset multiplot
GP
gnuplot "$tmp/plot.gp"
echo "wrote $out/window-421.png"
