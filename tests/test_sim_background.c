/* CUnit suite of the cross traffic (sim/net/background.h): seeded random flows slow a collective
 * whose links they share, and leave alone one whose links they do not. */
#include "common/status.h"
#include "sim/net/background.h"
#include "sim/net/cluster.h"
#include "sim/net/coll/collective.h"
#include "common/isolate.h"
#include "sim/platform/platform_gen.h"
#include "ss_test.h"

#include <simgrid/engine.h>
#include <stdlib.h>
#include <unistd.h>

enum { BG_NONE = 0, BG_ON_WORKERS = 1, BG_ON_OTHER_HOSTS = 2 };

typedef struct bg_case {
    int where; /* BG_* */
    double load;
} bg_case;

typedef struct member_arg {
    sim_group *world;
    int member;
    double end_s;
} member_arg;

static void member(void *p) {
    member_arg *a = p;
    sim_coll_result r;
    for (int i = 0; i < 5; i++) { /* five all-reduces of 10 MB */
        int rc = sim_allreduce(a->world, a->member, 1e7, NULL, &r);
        SS_ASSERT(rc == SS_OK);
    }
    a->end_s = r.end_s;
}

/* 4 workers running all-reduces, and 4 more hosts (on their own switch, joined by a FATPIPE). */
static int run_bg(void *arg, isolate_blob *out) {
    const bg_case *c = arg;
    char path[64];
    snprintf(path, sizeof path, "/tmp/ss_test_bg_%d.xml", (int)getpid());
    platform_gen_spec s = platform_gen_default();
    s.n_hosts = 4;
    s.n_ps = 4;
    s.bandwidth_Bps = 10e9 / 8;
    FILE *fp = fopen(path, "w");
    int rc = platform_generate(&s, fp);
    fclose(fp);
    if (rc != SS_OK) return rc;
    sim_cluster_opts o = {.platform_path = path, .n_workers = 4, .n_ps = 4};
    sim_cluster *cl;
    if ((rc = sim_cluster_open(&o, &cl)) != SS_OK) return rc;
    sim_background *bg = NULL;
    if (c->where != BG_NONE) {
        const sg_host_t *hosts =
            c->where == BG_ON_WORKERS ? sim_cluster_worker_hosts(cl) : sim_cluster_ps_hosts(cl);
        if ((rc = sim_background_start(hosts, 4, c->load, 11, &bg)) != SS_OK) return rc;
    }
    member_arg args[4];
    for (int w = 0; w < 4; w++) {
        args[w] = (member_arg){sim_cluster_world(cl), w, 0};
        sim_actor_spawn("member", w, sim_cluster_worker_host(cl, w), member, &args[w]);
    }
    double end;
    if ((rc = sim_cluster_simulate(cl, &end)) != SS_OK) return rc;
    double bytes = sim_background_bytes(bg);
    isolate_blob_append(out, &args[0].end_s, sizeof(double));
    isolate_blob_append(out, &bytes, sizeof(double));
    sim_background_free(bg);
    unlink(path);
    return SS_OK;
}

static void run_case(int where, double load, double *t, double *bg_bytes) {
    bg_case c = {where, load};
    isolate_blob b = {0};
    int rc = isolate_call(run_bg, &c, &b);
    if (rc != SS_OK) fprintf(stderr, "\n  %s\n", ss_error_message());
    CU_ASSERT_FATAL(rc == SS_OK && b.bytes == 2 * sizeof(double));
    double v[2];
    memcpy(v, b.data, sizeof v);
    *t = v[0];
    *bg_bytes = v[1];
    isolate_blob_free(&b);
}

static void test_background_shared_and_disjoint(void) {
    double quiet, shared, disjoint, bq, bs, bd;
    run_case(BG_NONE, 0, &quiet, &bq);
    run_case(BG_ON_WORKERS, 0.5, &shared, &bs);
    run_case(BG_ON_OTHER_HOSTS, 0.5, &disjoint, &bd);
    fprintf(stderr,
            "\n  5 all-reduces of 10 MB: quiet %.6f s, cross traffic on the same links "
            "%.6f s, on other hosts %.6f s\n",
            quiet, shared, disjoint);
    CU_ASSERT(bs > 0 && bd > 0);              /* the cross traffic did run in both cases */
    CU_ASSERT(shared > quiet * 1.10);         /* measurably slower on shared links */
    SS_CHECK_CLOSE(disjoint, quiet, 0, 1e-9); /* untouched on disjoint ones */
    /* deterministic: the same seed gives the same time */
    double again, ba;
    run_case(BG_ON_WORKERS, 0.5, &again, &ba);
    CU_ASSERT(again == shared);
}

static void test_background_bad_load(void) {
    sim_background *bg = NULL;
    CU_ASSERT_EQUAL(sim_background_start(NULL, 4, 0.0, 1, &bg), SS_EUSAGE);
    CU_ASSERT_EQUAL(sim_background_start(NULL, 4, 1.5, 1, &bg), SS_EUSAGE);
    CU_ASSERT(bg == NULL);
}

static CU_TestInfo bg_tests[] = {
    {"sim_background_start: slows a collective on shared links only",
     test_background_shared_and_disjoint},
    {"sim_background_start: load outside (0, 1] is refused", test_background_bad_load},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"cross traffic", NULL, NULL, NULL, NULL, bg_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}
