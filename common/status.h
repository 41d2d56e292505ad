/* Status codes and error reporting shared by every syncsim module.
 *
 * Library code returns an `int` status (SS_OK or one of the codes below) and, on failure,
 * describes the problem once with ss_error_set(); the caller reads ss_error_message(). Only
 * `main` decides the exit code, through ss_status_exit_code(). Programming errors (a broken
 * invariant, not bad input) hit SS_ASSERT, which aborts with file:line.
 *
 *     if (dataset_load(...) != SS_OK) { fprintf(stderr, "syncsim: %s\n", ss_error_message()); }
 */
#ifndef SS_COMMON_STATUS_H
#define SS_COMMON_STATUS_H

#include <stddef.h>

enum ss_status {
    SS_OK = 0,
    SS_EUSAGE = 1,    /* bad option, value or combination from the user: exit code 2 */
    SS_EINPUT = 2,    /* an input file is missing, malformed, truncated or of a wrong version */
    SS_EIO = 3,       /* reading or writing failed for a reason outside the input's content */
    SS_ENOMEM = 4,    /* an allocation failed */
    SS_EDEVICE = 5,   /* the compute device failed (CUDA error, no usable GPU when asked for) */
    SS_EDIVERGED = 6, /* training produced a NaN or Inf loss: a result, reported as such */
    SS_EINTERRUPT = 7 /* the user interrupted the run (SIGINT/SIGTERM) */
};

/* Records the message of the current failure (printf-style); returns `status` for chaining:
 *     return ss_error_set(SS_EINPUT, "%s: expected %zu bytes, found %zu", path, want, got); */
int ss_error_set(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The message of the last failure ("" if none). */
const char *ss_error_message(void);
/* Exit code of a status: 0 ok, 2 usage, 3 diverged, 130 interrupted, 1 any other runtime error. */
int ss_status_exit_code(int status);

/* Aborts with file:line and the failed condition: for broken invariants, never for bad input. */
#define SS_ASSERT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) ss_assert_fail(#cond, __FILE__, __LINE__);                                    \
    } while (0)
void ss_assert_fail(const char *cond, const char *file, int line) __attribute__((noreturn));

/* Allocation that aborts with file:line on failure (out of memory is not recoverable here). */
#define ss_malloc(bytes)   ss_malloc_check((bytes), __FILE__, __LINE__)
#define ss_calloc(n, size) ss_calloc_check((n), (size), __FILE__, __LINE__)
void *ss_malloc_check(size_t bytes, const char *file, int line);
void *ss_calloc_check(size_t n, size_t size, const char *file, int line);

#endif
