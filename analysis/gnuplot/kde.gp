# Kernel density estimates of gradient values (Gaussian kernel, Silverman's bandwidth), one line
# per step.
# usage: gnuplot -c kde.gp kde.csv OUTPUT png|svg|dumb 'TITLE'
# kde.csv: one block per step (blocks separated by two blank lines), each starting with a header
# "value,LABEL" and holding rows "value,density".
data = ARG1
term = (ARGC >= 3) ? ARG3 : 'png'
if (term eq 'png') { set terminal pngcairo size 900,560; set output ARG2 }
if (term eq 'svg') { set terminal svg size 900,560; set output ARG2 }
if (term eq 'dumb') { set terminal dumb size 100,30; set output }
set termoption noenhanced
set datafile separator ','
stats data using 1 nooutput
blocks = STATS_blocks
set key top right
set grid
set title (ARGC >= 4) ? ARG4 : 'gradient values: kernel density'
set xlabel 'gradient value'
set ylabel 'density'
plot for [i=0:blocks-1] data index i using 1:2 with lines lw 2 title columnheader(2)
