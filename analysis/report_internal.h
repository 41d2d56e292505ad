/* Internal to analysis/: report's figures (report_figures.c), written by report_write
 * (report.c) from the runs and their groups. Each returns a status. */
#ifndef SS_ANALYSIS_REPORT_INTERNAL_H
#define SS_ANALYSIS_REPORT_INTERNAL_H

#include "analysis/report.h"

int figure_accuracy(const run_record *runs, int n, const report_options *o, const report_group *g,
                    int ng);
/* Language models' groups: test perplexity against simulated time (perplexity.png). */
int figure_perplexity(const run_record *runs, int n, const report_options *o, const report_group *g,
                      int ng);
int figure_breakdown(const run_record *runs, int n, const report_options *o, const report_group *g,
                     int ng);
int figure_scaling(const run_record *runs, int n, const report_options *o);
int figure_delta(const run_record *runs, int n, const report_options *o, const report_group *g,
                 int ng);
int figure_timeline(const run_record *runs, int n, const report_options *o, const report_group *g,
                    int ng);
/* A file name's part from a label: letters, digits, '.', '-' and '_' kept, '=' as '-', the rest
 * as '_' ("selsync delta=0.05" gives "selsync_delta-0.05"). */
void figure_slug(const char *label, char *buf, size_t n);
int figure_kde(const run_record *runs, int n, const report_options *o);

#endif
