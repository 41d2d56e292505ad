# SelSync's relative gradient change Delta(g) against step (worker 0), with the threshold delta
# and the steps that synchronized marked (the SelSync paper's Delta-against-convergence figure).
# usage: gnuplot -c delta.gp delta.csv OUTPUT png|svg|dumb DELTA 'TITLE'
# delta.csv: header "step,delta,sync", then one row per step (sync: 1 synchronized, 0 local).
data = ARG1
term = (ARGC >= 3) ? ARG3 : 'png'
threshold = (ARGC >= 4) ? real(ARG4) : 0.3
if (term eq 'png') { set terminal pngcairo size 900,540; set output ARG2 }
if (term eq 'svg') { set terminal svg size 900,540; set output ARG2 }
if (term eq 'dumb') { set terminal dumb size 100,28; set output }
set termoption noenhanced
set datafile separator ','
set key outside bottom center horizontal
set grid
set title (ARGC >= 5) ? ARG5 : 'Delta(g) against step'
set xlabel 'step'
set ylabel 'Delta(g): relative change of E|g|'
plot data using 1:2 every ::1 with lines lw 1.5 title 'Delta(g), worker 0', \
     threshold with lines dt 2 lw 2 lc rgb 'red' title sprintf('delta = %g', threshold), \
     data using 1:($3 > 0 ? $2 : 1/0) every ::1 with points pt 7 ps 0.6 lc rgb 'dark-green' \
       title 'synchronized step'
