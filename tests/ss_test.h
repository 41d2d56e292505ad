/* Shared helpers of the CUnit programs: each tests/test_<module>.c defines its suites as a
 * CU_SuiteInfo table and calls ss_test_main(). Exit code: 0 all passed, 1 failures, 77 skipped. */
#ifndef SS_TESTS_SS_TEST_H
#define SS_TESTS_SS_TEST_H

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

static inline int ss_test_main(CU_SuiteInfo *suites) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    if (CU_register_suites(suites) != CUE_SUCCESS) {
        fprintf(stderr, "suite registration failed: %s\n", CU_get_error_msg());
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
