/* gnuplot figures: the scripts of analysis/gnuplot/ (compiled in) are written next to their data
 * and run once per terminal, so every figure exists as PNG and SVG, and a terminal ("dumb")
 * version can be shown in a shell. A user reruns a script by hand:
 *
 *     gnuplot -c OUT/accuracy.gp OUT/accuracy.csv accuracy.png png
 */
#ifndef SS_ANALYSIS_PLOTS_H
#define SS_ANALYSIS_PLOTS_H

#include <stdio.h>

typedef struct plots_script {
    const char *name; /* "accuracy": analysis/gnuplot/accuracy.gp */
    const char *text;
} plots_script;
extern const plots_script plots_scripts[]; /* ends with {NULL, NULL} */

/* Renders OUT/BASE.png and OUT/BASE.svg with the script `name` on OUT/DATA (a file name inside
 * OUT), with up to two extra arguments (NULL: none), and appends the commands to OUT/replot.sh.
 * If terminal is not NULL, the dumb rendering is also written to OUT/BASE.txt and to terminal.
 * SS_EIO when gnuplot is missing or fails. */
int plots_render(const char *out_dir, const char *name, const char *data, const char *base,
                 const char *arg4, const char *arg5, FILE *terminal);

/* Renders as plots_render does, with the script's extra arguments args[0..n_args) (at most 5:
 * gnuplot's ARG4..ARG8). */
int plots_render_args(const char *out_dir, const char *name, const char *data, const char *base,
                      const char *const *args, int n_args, FILE *terminal);

/* A policy's colour, the same in every figure whatever else was run ("#RRGGBB", Okabe-Ito's
 * colour-blind-safe palette): bsp black, ssp reddish purple, asp sky blue, fedavg green,
 * selsync vermillion, dssync blue, one worker orange, any other grey. A "-dlcp" variant has its
 * base policy's colour (and its own dash type in plots_styles). */
const char *plots_policy_colour(const char *policy);
/* Its mark in terminal (dumb) plots, where colours do not show: B bsp, P ssp, A asp, F fedavg,
 * S selsync, D dssync, 1 one worker, ? another; lower case for a "-dlcp" variant. */
char plots_policy_mark(const char *policy);
/* The style of each curve, as the scripts read it (word i: "#RRGGBB:M:D", colour, terminal mark
 * and dash type): the k-th curve of one policy (counting its -dlcp variant) gets dash type k, so
 * groups of one policy differ by dashes and keep its colour. */
void plots_styles(const char *const *policies, int n, char *buf, size_t size);

/* One line of a panel figure: the accuracy curve of a run (its metrics.csv). */
typedef struct plots_curve {
    const char *dir;   /* the run's directory */
    const char *title; /* its entry in the key */
    int panel;         /* 0 .. n_panels - 1 */
} plots_curve;

/* compare's figure: test accuracy against simulated time, one panel per title, each panel's
 * curves in the order given (a run without a readable metrics.csv is left out), each policy in
 * its colour (plots_policy_colour; curve titles are policy names), the panels on shared axes,
 * `title` above them all. Writes the points to OUT/BASE-curves.csv (copied as they are in the
 * runs' metrics.csv) and renders them with analysis/gnuplot/compare.gp as plots_render does. */
int plots_accuracy_panels(const char *out_dir, const char *base, const plots_curve *curves, int n,
                          const char *const *panel_titles, int n_panels, const char *title,
                          FILE *terminal);
/* plots_accuracy_panels of another metrics.csv column: "test_accuracy" as above, or
 * "test_perplexity" (a language model's figure: the y axis says perplexity, on a log scale, lower
 * is better). */
int plots_metric_panels(const char *out_dir, const char *base, const plots_curve *curves, int n,
                        const char *const *panel_titles, int n_panels, const char *title,
                        const char *column, FILE *terminal);

#endif
