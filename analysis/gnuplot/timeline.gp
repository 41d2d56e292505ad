# Sync/local timeline of one run: each worker's steps as bars along simulated time, green for
# steps that synchronized, grey for local steps.
# usage: gnuplot -c timeline.gp timeline.csv OUTPUT png|svg|dumb 'TITLE'
# timeline.csv: header "worker,start_s,end_s,sync", then one row per worker step.
data = ARG1
term = (ARGC >= 3) ? ARG3 : 'png'
if (term eq 'png') { set terminal pngcairo size 1000,460 font ',11'; set output ARG2 }
if (term eq 'svg') { set terminal svg size 1000,420; set output ARG2 }
if (term eq 'dumb') { set terminal dumb size 100,24; set output }
set termoption noenhanced
set datafile separator ','
set title (ARGC >= 4) ? ARG4 : 'sync/local timeline'
set xlabel 'simulated time (s)'
set ylabel 'worker'
set key outside top center horizontal
stats data using 1 every ::1 nooutput
set yrange [-0.5:STATS_max+0.5]
set ytics 1
plot data using ($4 > 0 ? 1/0 : $2):1:($3-$2):(0) every ::1 with vectors nohead lw 8 \
       lc rgb 'grey60' title 'local step', \
     data using ($4 > 0 ? $2 : 1/0):1:($3-$2):(0) every ::1 with vectors nohead lw 8 \
       lc rgb 'forest-green' title 'synchronized step'
