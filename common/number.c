/* Strict decimal numbers (number.h). */
#include "common/number.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* Length of the longest decimal real at the start of text (0: none). */
static size_t decimal_prefix(const char *text) {
    const char *p = text;
    if (*p == '+' || *p == '-') p++;
    int mantissa = digits(&p);
    if (*p == '.') {
        p++;
        mantissa += digits(&p);
    }
    if (mantissa == 0) return 0;
    if (*p == 'e' || *p == 'E') {
        const char *q = p + 1;
        if (*q == '+' || *q == '-') q++;
        if (digits(&q) > 0) p = q; /* else "5E" is 5 followed by the unit "E..." */
    }
    return (size_t)(p - text);
}

int number_parse_prefix(const char *text, double *out, const char **rest) {
    size_t n = text ? decimal_prefix(text) : 0;
    char buf[128];
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, text, n);
    buf[n] = '\0';
    if (number_parse_double(buf, out) != 0) return -1;
    *rest = text + n;
    return 0;
}

int number_parse_list(const char *text, int integer_only, double *values, int max, int *count) {
    *count = 0;
    if (!text || !*text) return -1;
    for (const char *p = text;;) {
        size_t len = strcspn(p, ",");
        char item[128];
        if (len == 0 || len >= sizeof item) return -1;
        memcpy(item, p, len);
        item[len] = '\0';
        double v;
        long long iv;
        if (integer_only ? number_parse_llong(item, &iv) : number_parse_double(item, &v)) return -1;
        if (*count == max) return -2;
        values[(*count)++] = integer_only ? (double)iv : v;
        if (p[len] == '\0') return 0;
        p += len + 1;
    }
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
