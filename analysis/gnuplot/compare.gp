# compare: test accuracy against simulated time, one panel per network, one line per policy.
# usage: gnuplot -c compare.gp compare-curves.csv OUTPUT png|svg|dumb 'RUNS' 'TITLES'
# compare-curves.csv: one block per run, panel after panel, blocks separated by two blank lines;
# each block starts with a header line "sim_time_s,POLICY" and holds rows
# "sim_time_s,test_accuracy". RUNS: the number of blocks of each panel ("4 4"); TITLES: the
# panel titles, each in double quotes ('"8 workers, 5Gbps" "8 workers, 100Gbps"').
data = ARG1
term = (ARGC >= 3) ? ARG3 : 'png'
runs = (ARGC >= 4) ? ARG4 : '1'
titles = (ARGC >= 5) ? ARG5 : ''
panels = words(runs)
if (term eq 'png') { set terminal pngcairo size 640*panels,480 noenhanced; set output ARG2 }
if (term eq 'svg') { set terminal svg size 640*panels,480 noenhanced; set output ARG2 }
if (term eq 'dumb') { set terminal dumb size 100,(26*panels > 60 ? 60 : 26*panels); set output }
set datafile separator ','
set key bottom right
set grid
set xlabel 'simulated time (s)'
set ylabel 'test accuracy'
# side by side in an image, one under the other in a terminal
if (term eq 'dumb') { set multiplot layout panels,1 } else { set multiplot layout 1,panels }
first = 0
do for [k=1:panels] {
    n = int(word(runs, k))
    set title word(titles, k)
    if (n > 0) {
        plot for [i=first:first+n-1] data index i using 1:2 with linespoints \
             title columnheader(2)
    } else {
        plot 0 notitle
    }
    first = first + n
}
unset multiplot
