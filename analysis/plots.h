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

/* One line of a panel figure: the accuracy curve of a run (its metrics.csv). */
typedef struct plots_curve {
    const char *dir;   /* the run's directory */
    const char *title; /* its entry in the key */
    int panel;         /* 0 .. n_panels - 1 */
} plots_curve;

/* compare's figure: test accuracy against simulated time, one panel per title, each panel's
 * curves in the order given (a run without a readable metrics.csv is left out). Writes the
 * points to OUT/BASE-curves.csv (copied as they are in the runs' metrics.csv) and renders them
 * with analysis/gnuplot/compare.gp as plots_render does. */
int plots_accuracy_panels(const char *out_dir, const char *base, const plots_curve *curves, int n,
                          const char *const *panel_titles, int n_panels, FILE *terminal);

#endif
