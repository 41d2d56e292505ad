/* Strict decimal numbers (number.h). */
#include "common/number.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

/* Digits at *p; returns how many and moves *p past them. */
static int digits(const char **p) {
    int n = 0;
    while (isdigit((unsigned char)**p)) {
        (*p)++;
        n++;
    }
    return n;
}

int number_is_decimal(const char *text, int integer_only) {
    const char *p = text;
    if (*p == '+' || *p == '-') p++;
    int mantissa = digits(&p);
    if (!integer_only && *p == '.') {
        p++;
        mantissa += digits(&p);
    }
    if (mantissa == 0) return 0;
    if (!integer_only && (*p == 'e' || *p == 'E')) {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (digits(&p) == 0) return 0;
    }
    return *p == '\0';
}

int number_parse_double(const char *text, double *out) {
    if (!number_is_decimal(text, 0)) return -1;
    errno = 0;
    char *end = NULL;
    double v = strtod(text, &end);
    if (errno || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int number_parse_llong(const char *text, long long *out) {
    if (!number_is_decimal(text, 1)) return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int number_parse_long(const char *text, long lo, long hi, long *out) {
    long long v;
    if (number_parse_llong(text, &v) || v < lo || v > hi) return -1;
    *out = (long)v;
    return 0;
}
