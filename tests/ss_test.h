/* Shared helpers of the CUnit programs: each tests/test_<module>.c defines its suites as a
 * CU_SuiteInfo table and calls ss_test_main(). Exit code: 0 all passed, 1 failures, 77 skipped.
 *
 * Running part of a program (every test must pass alone, in any order):
 *     SS_TEST='=exact test name' ./test_sim    # that one test
 *     SS_TEST=closed ./test_sim                # the tests whose name contains "closed"
 *     SS_TEST_LIST=1 ./test_sim                # prints the test names, one a line, runs nothing
 * scripts/test-each.sh runs every test of every program alone this way.
 * A test that cannot run here calls SS_SKIP("reason"): it passes and prints "SKIPPED: reason". */
#ifndef SS_TESTS_SS_TEST_H
#define SS_TESTS_SS_TEST_H

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Checks |a - b| <= tol + rel * |b| and prints both values when it fails. */
#define SS_CHECK_CLOSE(a, b, tol, rel)                                                             \
    do {                                                                                           \
        double ss_a_ = (double)(a), ss_b_ = (double)(b);                                           \
        int ss_ok_ = fabs(ss_a_ - ss_b_) <= (tol) + (rel)*fabs(ss_b_);                             \
        if (!ss_ok_)                                                                               \
            fprintf(stderr, "\n  %s:%d: %s = %.10g, expected %s = %.10g (tol %g, rel %g)\n",       \
                    __FILE__, __LINE__, #a, ss_a_, #b, ss_b_, (double)(tol), (double)(rel));       \
        CU_ASSERT(ss_ok_);                                                                         \
    } while (0)

/* Passes the current test with a visible note: for a test whose tool is missing here. */
#define SS_SKIP(reason)                                                                            \
    do {                                                                                           \
        fprintf(stderr, "\n  SKIPPED: %s\n", (reason));                                            \
        CU_PASS(reason);                                                                           \
        return;                                                                                    \
    } while (0)

/* Runs the shell command `cmd` (its stderr joined to stdout: add 2>&1) and returns its exit code
 * (-1 if it did not exit); the output text in *output (malloc'ed: the caller frees), or dropped
 * when output is NULL. The CLI tests run the built syncsim through it. */
static inline int ss_test_shell(const char *cmd, char **output) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap);
    while (buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (cap - len < 4096) buf = realloc(buf, cap *= 2);
    }
    if (!buf) abort();
    buf[len] = '\0';
    int status = pclose(p);
    if (output)
        *output = buf;
    else
        free(buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Entries of the directory dir other than . and .. (-1: it cannot be read): a test's TMPDIR
 * that must stay empty. */
static inline int ss_test_dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* 1 when `name` is selected by SS_TEST ("=name" exact, else substring; unset: all). */
static inline int ss_test_selected(const char *name) {
    const char *want = getenv("SS_TEST");
    if (!want || !*want) return 1;
    if (want[0] == '=') return strcmp(name, want + 1) == 0;
    return strstr(name, want) != NULL;
}

/* Applies SS_TEST to the registry: unselected tests and suites left without a test go inactive
 * (inactive ones are not failures). Returns the number of selected tests. */
static inline int ss_test_filter(int list) {
    int selected = 0;
    for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext) {
        int in_suite = 0;
        for (CU_pTest t = s->pTest; t; t = t->pNext) {
            int on = ss_test_selected(t->pName);
            if (list && on) printf("%s\n", t->pName);
            CU_set_test_active(t, on ? CU_TRUE : CU_FALSE);
            in_suite += on;
        }
        CU_set_suite_active(s, in_suite ? CU_TRUE : CU_FALSE);
        selected += in_suite;
    }
    CU_set_fail_on_inactive(CU_FALSE);
    return selected;
}

static inline int ss_test_main(CU_SuiteInfo *suites) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    if (CU_register_suites(suites) != CUE_SUCCESS) {
        fprintf(stderr, "suite registration failed: %s\n", CU_get_error_msg());
        CU_cleanup_registry();
        return 1;
    }
    const char *list = getenv("SS_TEST_LIST");
    int selected = ss_test_filter(list && *list);
    if (list && *list) {
        CU_cleanup_registry();
        return 0;
    }
    if (selected == 0) {
        fprintf(stderr, "SS_TEST=%s selects no test of this program\n", getenv("SS_TEST"));
        CU_cleanup_registry();
        return 1;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    unsigned run = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    return (failed || run == 0) ? 1 : 0;
}

#endif
