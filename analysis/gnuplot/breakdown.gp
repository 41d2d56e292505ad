# Where a worker's simulated time goes: compute, communication and wait, stacked, per group.
# usage: gnuplot -c breakdown.gp breakdown.csv OUTPUT png|svg|dumb
# breakdown.csv: header "group,compute_s,comm_s,wait_s", then one row per group (means over seeds).
data = ARG1
term = (ARGC >= 3) ? ARG3 : 'png'
if (term eq 'png') { set terminal pngcairo size 1000,800; set output ARG2 }
if (term eq 'svg') { set terminal svg size 1000,800; set output ARG2 }
if (term eq 'dumb') { set terminal dumb size 100,30; set output }
set termoption noenhanced
set datafile separator ','
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.7
set key outside top center horizontal
set key autotitle columnheader
set grid y
set title 'simulated time per worker: compute, communication, wait'
set ylabel 'simulated time (s)'
set xtics rotate by 90 right nomirror
set bmargin 22
set yrange [0:*]
plot data using 2:xtic(1) title 'compute', '' using 3 title 'communication', \
     '' using 4 title 'wait'
