# Where a worker's simulated time goes, per step: compute, communication and wait, stacked, per
# group (per step, so that groups that take different numbers of steps compare).
# usage: gnuplot -c breakdown.gp breakdown.csv OUTPUT png|svg|dumb ['TITLE']
# breakdown.csv: header "group,compute_ms,comm_ms,wait_ms", then one row per group (means over
# seeds of each run's time per step of a worker, in ms).
data = ARG1
term = (ARGC >= 3) ? ARG3 : 'png'
title = (ARGC >= 4) ? ARG4 : 'time per step of a worker: compute, communication, wait'
if (term eq 'png') { set terminal pngcairo size 1100,760 font ',11'; set output ARG2 }
if (term eq 'svg') { set terminal svg size 1100,760 font 'sans,11'; set output ARG2 }
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
set title title
set ylabel 'simulated time per step (ms)'
# a terminal cannot rotate text: its labels run level
if (term eq 'dumb') { set xtics nomirror } else { set xtics rotate by 45 right nomirror; set bmargin 14; set lmargin 22 }
set yrange [0:*]
plot data using 2:xtic(1) title 'compute' lc rgb '#0072B2', '' using 3 title 'communication' \
     lc rgb '#E69F00', '' using 4 title 'wait' lc rgb '#999999'
