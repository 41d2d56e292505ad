# Test accuracy against simulated time, one line per run group (policy, platform, ...), each
# policy in its own colour in every figure; time on a log scale when the groups' time spans
# differ over 10 times.
# usage: gnuplot -c accuracy.gp accuracy.csv OUTPUT png|svg|dumb ['STYLES' ['TITLE' ['perplexity']]]
# accuracy.csv: one block per group, blocks separated by two blank lines; each block starts with
# a header line "sim_time_s,LABEL" and holds rows "sim_time_s,test_accuracy". STYLES: one word
# per block, "#RRGGBB:M:D" (colour, its mark in a terminal plot, dash type); TITLE: the title
# (the setting of the runs; a newline starts a second line). 'perplexity': the second column is a
# language model's test perplexity (perplexity.csv; lower is better), on a logarithmic axis.
data = ARG1
term = (ARGC >= 3) ? ARG3 : 'png'
styles = (ARGC >= 4) ? ARG4 : ''
title = (ARGC >= 5) ? ARG5 : 'test accuracy against simulated time'
ppl = (ARGC >= 6) ? (ARG6 eq 'perplexity') : 0
if (term eq 'png') { set terminal pngcairo size 960,600 font ',11'; set output ARG2 }
if (term eq 'svg') { set terminal svg size 960,600 font 'sans,11'; set output ARG2 }
if (term eq 'dumb') { set terminal dumb size 100,32; set output }
set termoption noenhanced
set datafile separator ','
stats data using 1 nooutput
blocks = STATS_blocks
has_style(i) = words(styles) > i
colour(i) = has_style(i) ? substr(word(styles, i+1), 1, 7) : '#808080'
mark(i) = has_style(i) ? substr(word(styles, i+1), 9, 9) : sprintf('%d', i % 10)
dtype(i) = has_style(i) ? int(substr(word(styles, i+1), 11, 11)) : 1
# the groups' time spans: logarithmic time when the slowest group's is over 10 times the
# fastest's (a 5 Gbps and a 100 Gbps cluster), so that the fast groups' curves still show
slowest = 0
fastest = 1e300
tmin_pos = 1e300
do for [i=0:blocks-1] {
    stats data index i using 1 nooutput
    slowest = (STATS_max > slowest) ? STATS_max : slowest
    fastest = (STATS_max < fastest) ? STATS_max : fastest
    stats data index i using ($1 > 0 ? $1 : 1/0) nooutput
    tmin_pos = (STATS_min < tmin_pos) ? STATS_min : tmin_pos
}
if (fastest > 0 && slowest > 10*fastest) {
    set logscale x 10
    set xrange [tmin_pos/1.2:slowest*1.2]
    set xlabel 'simulated time (s, log scale)'
} else {
    set xlabel 'simulated time (s)'
}
set grid
set title title
if (ppl) {
    set key top right
    set logscale y 10
    set ytics (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000)
    set ylabel 'test perplexity (log scale, lower is better)'
} else {
    set key bottom right
    set ylabel 'test accuracy'
}
# a terminal shows no colours: each group is drawn with its policy's letter (the key maps them)
if (term eq 'dumb') {
    plot for [i=0:blocks-1] data index i using 1:2 with linespoints pt mark(i) title columnheader(2)
} else {
    plot for [i=0:blocks-1] data index i using 1:2 with linespoints pt 7 ps 0.5 lw 2 \
         lc rgb colour(i) dt dtype(i) title columnheader(2)
}
