#include "common/sorted.h"

#include <stdlib.h>

int sorted_cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void sorted_doubles(double *v, size_t n) {
    qsort(v, n, sizeof *v, sorted_cmp_double);
}

double sorted_median(const double *v, size_t n) {
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
