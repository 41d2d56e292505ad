# SelSync's relative gradient change Delta(g) against step: per step the largest Delta over the
# workers, the quantity SelSync's decision compares with delta (a step synchronizes when any
# worker's Delta >= delta), the threshold delta, and the steps that synchronized (the SelSync
# paper's Delta-against-convergence figure).
# usage: gnuplot -c delta.gp delta.csv OUTPUT png|svg|dumb DELTA 'TITLE'
# delta.csv: header "step,delta_max,sync", then one row per step (sync: 1 synchronized, 0 local;
# delta_max empty while Delta is undefined: the warm-up of the EWMA window, whose steps all
# synchronize and are not drawn).
data = ARG1
term = (ARGC >= 3) ? ARG3 : 'png'
threshold = (ARGC >= 4) ? real(ARG4) : 0.3
if (term eq 'png') { set terminal pngcairo size 960,560 font ',11'; set output ARG2 }
if (term eq 'svg') { set terminal svg size 960,560 font 'sans,11'; set output ARG2 }
if (term eq 'dumb') { set terminal dumb size 100,28; set output }
set termoption noenhanced
set datafile separator ','
set key outside bottom center horizontal
set bmargin 6
set grid
set title (ARGC >= 5) ? ARG5 : 'largest Delta(g) over the workers against step'
set xlabel 'step'
set ylabel 'largest Delta(g) over the workers'
# in a terminal the synchronized steps are drawn as S
if (term eq 'dumb') {
    plot data using 1:2 every ::1 with lines title 'max Delta(g) over workers', \
         threshold with lines title sprintf('delta = %g', threshold), \
         data using 1:($3 > 0 ? $2 : 1/0) every ::1 with points pt 'S' title 'synchronized step'
} else {
    plot data using 1:2 every ::1 with lines lw 1.5 lc rgb '#D55E00' \
           title 'max Delta(g) over workers', \
         threshold with lines dt 2 lw 2 lc rgb 'black' title sprintf('delta = %g', threshold), \
         data using 1:($3 > 0 ? $2 : 1/0) every ::1 with points pt 7 ps 0.6 lc rgb '#009E73' \
           title 'synchronized step'
}
