#include "analysis/stats.h"
#include "common/status.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_math.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

stats_summary stats_summarize(const double *x, size_t n) {
    stats_summary s = {0, NAN, NAN, NAN};
    double *v = ss_malloc(sizeof(double) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i])) v[s.n++] = x[i];
    if (s.n >= 1) s.mean = gsl_stats_mean(v, 1, s.n);
    if (s.n >= 2) {
        s.sd = gsl_stats_sd_m(v, 1, s.n, s.mean);
        /* two-sided 95 %: the upper 2.5 % quantile of t with n - 1 degrees of freedom */
        s.ci95 = gsl_cdf_tdist_Qinv(0.025, (double)(s.n - 1)) * s.sd / sqrt((double)s.n);
    }
    free(v);
    return s;
}

double stats_silverman_bandwidth(const double *x, size_t n) {
    if (n < 2) return 0;
    double *v = ss_malloc(sizeof(double) * n);
    memcpy(v, x, sizeof(double) * n);
    gsl_sort(v, 1, n);
    const double sd = gsl_stats_sd(v, 1, n);
    const double iqr = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.75) -
                       gsl_stats_quantile_from_sorted_data(v, 1, n, 0.25);
    free(v);
    double spread = sd;
    if (iqr > 0 && iqr / 1.34 < spread) spread = iqr / 1.34;
    return 0.9 * spread * pow((double)n, -0.2);
}

void stats_kde(const double *x, size_t n, double h, const double *grid, double *density, size_t m) {
    SS_ASSERT(h > 0);
    const double norm = 1.0 / ((double)n * h * sqrt(2.0 * M_PI));
    for (size_t j = 0; j < m; j++) {
        double sum = 0;
        for (size_t i = 0; i < n; i++) {
            const double u = (grid[j] - x[i]) / h;
            sum += exp(-0.5 * u * u);
        }
        density[j] = sum * norm;
    }
}
