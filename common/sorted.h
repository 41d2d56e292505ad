/* Sorted doubles: the comparator, sort and median that validate, bench and the policies share.
 *
 *     sorted_doubles(v, n);               // ascending (no NaN in v)
 *     double m = sorted_median(v, n);     // n >= 1
 */
#ifndef SS_COMMON_SORTED_H
#define SS_COMMON_SORTED_H

#include <stddef.h>

/* qsort's comparator of doubles, ascending. */
int sorted_cmp_double(const void *a, const void *b);
/* Sorts v[0..n) in ascending order (v holds no NaN). */
void sorted_doubles(double *v, size_t n);
/* The median of v[0..n), sorted, n >= 1: the middle value, or the mean of the two middle ones. */
double sorted_median(const double *v, size_t n);

#endif
