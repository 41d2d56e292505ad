# compare: test accuracy against simulated time, one panel per network, one line per policy, the
# panels on shared axes (the same accuracy range; the same time range, logarithmic when the
# slowest panel's time is over 10 times the fastest's, so that a fast network's curves still
# show), each policy in its own colour in every figure.
# usage: gnuplot -c compare.gp compare-curves.csv OUTPUT png|svg|dumb 'RUNS' 'TITLES' 'STYLES' 'TITLE' ['perplexity']
# compare-curves.csv: one block per run, panel after panel, blocks separated by two blank lines;
# each block starts with a header line "sim_time_s,POLICY" and holds rows
# "sim_time_s,test_accuracy". RUNS: the number of blocks of each panel ("4 4"); TITLES: the
# panel titles, each in double quotes ('"5Gbps" "100Gbps"'); STYLES: one word per block,
# "#RRGGBB:M:D" (colour, its mark in a terminal, dash type); TITLE: above the panels (the setting).
# 'perplexity': the second column is a language model's test perplexity (lower is better), drawn
# on a logarithmic axis.
data = ARG1
term = (ARGC >= 3) ? ARG3 : 'png'
runs = (ARGC >= 4) ? ARG4 : '1'
titles = (ARGC >= 5) ? ARG5 : ''
styles = (ARGC >= 6) ? ARG6 : ''
title = (ARGC >= 7) ? ARG7 : ''
ppl = (ARGC >= 8) ? (ARG8 eq 'perplexity') : 0
panels = words(runs)
if (term eq 'png') { set terminal pngcairo size 560*panels,520 noenhanced font ',11'; set output ARG2 }
if (term eq 'svg') { set terminal svg size 560*panels,520 noenhanced font 'sans,11'; set output ARG2 }
if (term eq 'dumb') { set terminal dumb size 100,(26*panels > 60 ? 60 : 26*panels); set output }
set datafile separator ','
has_style(i) = words(styles) > i
colour(i) = has_style(i) ? substr(word(styles, i+1), 1, 7) : '#808080'
mark(i) = has_style(i) ? substr(word(styles, i+1), 9, 9) : '*'
dtype(i) = has_style(i) ? int(substr(word(styles, i+1), 11, 11)) : 1
# shared axes: the whole file's accuracy range, and each panel's time range
stats data using 1:2 nooutput
ymin = STATS_min_y
ymax = STATS_max_y
pad = (ymax > ymin) ? 0.05*(ymax - ymin) : 0.01
tmin_pos = 1e300
tmax_all = 0
slowest = 0
fastest = 1e300
first = 0
do for [k=1:panels] {
    n = int(word(runs, k))
    if (n > 0) {
        stats data index first:first+n-1 using 1 nooutput
        slowest = (STATS_max > slowest) ? STATS_max : slowest
        fastest = (STATS_max < fastest) ? STATS_max : fastest
        stats data index first:first+n-1 using ($1 > 0 ? $1 : 1/0) nooutput
        tmin_pos = (STATS_min < tmin_pos) ? STATS_min : tmin_pos
    }
    first = first + n
}
logx = (fastest > 0 && slowest > 10*fastest)
if (ppl) {
    set logscale y 10
    set yrange [ymin/1.1:ymax*1.1]
    set ytics (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000)
} else {
    set yrange [ymin-pad:ymax+pad]
}
if (logx) {
    set logscale x 10
    set xrange [tmin_pos/1.2:slowest*1.2]
    set xlabel 'simulated time (s, log scale)'
} else {
    set xrange [0:slowest*1.02]
    set xlabel 'simulated time (s)'
}
if (ppl) { set key top right; set ylabel 'test perplexity (log scale, lower is better)' } else { set key bottom right; set ylabel 'test accuracy' }
set grid
# side by side in an image, one under the other in a terminal
if (term eq 'dumb') { set multiplot layout panels,1 title title } else { set multiplot layout 1,panels title title }
first = 0
do for [k=1:panels] {
    n = int(word(runs, k))
    set title word(titles, k)
    if (n > 0) {
        if (term eq 'dumb') {
            plot for [i=first:first+n-1] data index i using 1:2 with linespoints pt mark(i) \
                 title columnheader(2)
        } else {
            plot for [i=first:first+n-1] data index i using 1:2 with linespoints pt 7 ps 0.5 \
                 lw 2 lc rgb colour(i) dt dtype(i) title columnheader(2)
        }
    } else {
        plot 0 notitle
    }
    first = first + n
}
unset multiplot
