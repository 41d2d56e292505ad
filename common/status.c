#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char error_message[2048];

int ss_error_set(int status, const char *fmt, ...) {
    /* formatted apart first: an argument may be ss_error_message() itself (a message prefixed) */
    char buf[sizeof error_message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(error_message, buf, sizeof buf);
    return status;
}

const char *ss_error_message(void) {
    return error_message;
}

int ss_status_exit_code(int status) {
    switch (status) {
    case SS_OK:
        return 0;
    case SS_EUSAGE:
        return 2;
    case SS_EDIVERGED:
        return 3;
    case SS_EINTERRUPT:
        return 130;
    default:
        return 1;
    }
}

void ss_assert_fail(const char *cond, const char *file, int line) {
    fprintf(stderr, "syncsim: internal error at %s:%d: assertion '%s' failed\n", file, line, cond);
    abort();
}

void *ss_malloc_check(size_t bytes, const char *file, int line) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "syncsim: out of memory allocating %zu bytes at %s:%d\n", bytes, file,
                line);
        abort();
    }
    return p;
}

void *ss_calloc_check(size_t n, size_t size, const char *file, int line) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "syncsim: out of memory allocating %zu x %zu bytes at %s:%d\n", n, size,
                file, line);
        abort();
    }
    return p;
}
