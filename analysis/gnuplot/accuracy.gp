# Test accuracy against simulated time, one line per run group (policy, platform, ...).
# usage: gnuplot -c accuracy.gp accuracy.csv OUTPUT png|svg|dumb
# accuracy.csv: one block per group, blocks separated by two blank lines; each block starts with
# a header line "sim_time_s,LABEL" and holds rows "sim_time_s,test_accuracy".
data = ARG1
term = (ARGC >= 3) ? ARG3 : 'png'
if (term eq 'png') { set terminal pngcairo size 900,560; set output ARG2 }
if (term eq 'svg') { set terminal svg size 900,560; set output ARG2 }
if (term eq 'dumb') { set terminal dumb size 100,32; set output }
set termoption noenhanced
set datafile separator ','
stats data using 1 nooutput
blocks = STATS_blocks
set key bottom right
set grid
set title 'test accuracy against simulated time'
set xlabel 'simulated time (s)'
set ylabel 'test accuracy'
# colours cycle over 8; the point type changes with each cycle
plot for [i=0:blocks-1] data index i using 1:2 with linespoints pt (7+2*(i/8)) ps 0.6 \
     lc (1+i%8) title columnheader(2)
