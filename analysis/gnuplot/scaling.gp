# BSP scaling: throughput with N workers relative to one worker, one line per platform.
# usage: gnuplot -c scaling.gp scaling.csv OUTPUT png|svg|dumb ['TITLE']
# scaling.csv: one block per platform (blocks separated by two blank lines), each starting with a
# header "workers,PLATFORM" and holding rows "workers,relative_throughput".
data = ARG1
term = (ARGC >= 3) ? ARG3 : 'png'
if (term eq 'png') { set terminal pngcairo size 800,560; set output ARG2 }
if (term eq 'svg') { set terminal svg size 800,560; set output ARG2 }
if (term eq 'dumb') { set terminal dumb size 90,30; set output }
set termoption noenhanced
set datafile separator ','
stats data using 1 nooutput
blocks = STATS_blocks
set key top left
set grid
set title (ARGC >= 4) ? ARG4 : 'BSP throughput relative to one worker'
set xlabel 'workers'
set ylabel 'throughput / one worker'
# log-log: linear scaling is the diagonal, and a communication-bound cluster still shows
set logscale x 2
set logscale y 10
set format y '%g'
set xrange [1:*]
plot x with lines dt 2 lc rgb 'black' title 'linear', \
     for [i=0:blocks-1] data index i using 1:2 with linespoints pt 7 title columnheader(2)
