/* TTA and speedup (tta.h). */
#include "analysis/tta.h"
#include "analysis/runs.h"
#include "common/status.h"

#include <math.h>
#include <stdlib.h>

double tta_target(double reference_accuracy, double margin) {
    return reference_accuracy - margin;
}

double tta_of_run(const char *dir, double target) {
    double *t, *a;
    size_t m;
    if (run_curve_read(dir, &t, &a, &m) != SS_OK) return NAN;
    const double tta = run_curve_tta_s(t, a, m, target);
    free(t);
    free(a);
    return tta < 0 ? NAN : tta;
}

double tta_speedup(double reference_tta_s, double tta_s) {
    return reference_tta_s > 0 && tta_s > 0 ? reference_tta_s / tta_s : NAN;
}
