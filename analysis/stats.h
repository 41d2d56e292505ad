/* Statistics over seeds, with GSL: mean, sample standard deviation and the half-width of the 95 %
 * confidence interval of the mean (Student's t with n - 1 degrees of freedom), and a Gaussian
 * kernel density estimate with Silverman's bandwidth for the gradient-value plots.
 *
 *     stats_summary s = stats_summarize(acc, n);   // s.mean +- s.ci95 (NaN when n < 2)
 */
#ifndef SS_ANALYSIS_STATS_H
#define SS_ANALYSIS_STATS_H

#include <stddef.h>

typedef struct stats_summary {
    size_t n;    /* values summarized (NaNs are skipped) */
    double mean; /* NaN when n = 0 */
    double sd;   /* sample standard deviation (n - 1); NaN when n < 2 */
    double ci95; /* half-width of the 95 % CI of the mean, t(0.975, n-1) sd / sqrt(n); NaN, n < 2 */
} stats_summary;

/* Summarizes the finite values of x (n entries). */
stats_summary stats_summarize(const double *x, size_t n);

/* Silverman's rule of thumb: h = 0.9 min(sd, IQR / 1.34) n^(-1/5); 0 when n < 2 or all equal. */
double stats_silverman_bandwidth(const double *x, size_t n);

/* Gaussian KDE of x (n values, bandwidth h > 0) at the m points of grid: density[j]. */
void stats_kde(const double *x, size_t n, double h, const double *grid, double *density, size_t m);

#endif
