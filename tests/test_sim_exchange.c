/* CUnit suite of the exchange's SimGrid backend (sim/exchange/exchange_simgrid.h): the conformance
 * table every backend passes (exchange_cases.h), and beyond it: the non-blocking
 * all-reduce ends when the blocking one does, the all-gather delivers every member's bytes,
 * groups are the same object for the same list, the staleness bound holds, and the parameter
 * servers' hooks see every shard. */
#include "common/status.h"
#include "sim/exchange/exchange_simgrid.h"
#include "common/isolate.h"
#include "sim/platform/platform_gen.h"
#include "exchange_cases.h"
#include "ss_test.h"

#include <simgrid/actor.h>
#include <string.h>
#include <unistd.h>

#define N CASE_WORKERS

typedef struct case_out {
    double end_s[N];      /* last call's end, per worker */
    double bytes_sent[N]; /* over all calls */
    int gather_ok;        /* every all-gather delivered every member's byte */
    int group_same;       /* group() gave the same handle for the same list */
    long max_gap;         /* largest clock gap seen by clock_wait */
    long rounds;          /* rounds counted by clock_advance */
    int pushes, pulls;    /* hook calls */
    int test_before_wait; /* test() right after start */
    int calls_ok;         /* every call returned SS_OK */
} case_out;

typedef struct run_ctx {
    exchange *ex;
    int mode; /* 0 blocking all-reduce, 1 non-blocking, 2 SSP clocks over a PS */
    case_out out;
} run_ctx;

/* The actors run in the isolated child: they note failures in the outcome, the parent asserts. */
#define CALL_OK(c, call)                                                                           \
    do {                                                                                           \
        if ((call) != SS_OK) (c)->out.calls_ok = 0;                                                \
    } while (0)

typedef struct worker_arg {
    run_ctx *ctx;
    int rank;
} worker_arg;

static void on_push(void *ctx, int server, int worker, int64_t round, const void *payload) {
    (void)server, (void)worker, (void)round, (void)payload;
    ((run_ctx *)ctx)->out.pushes++;
}

static void on_pull(void *ctx, int server, int worker, int64_t round) {
    (void)server, (void)worker, (void)round;
    ((run_ctx *)ctx)->out.pulls++;
}

static void collectives(run_ctx *c, int w) {
    const exchange *ex = c->ex;
    exchange_group *world = ex->ops->group(ex->self, NULL, N);
    exchange_result r = {0};
    for (int i = 0; i < 3; i++) {
        if (c->mode == 0) {
            CALL_OK(c, ex->ops->allreduce(ex->self, world, w, NULL, 250000, 1e6, &r));
        } else {
            exchange_request *rq = ex->ops->allreduce_start(ex->self, world, w, NULL, 250000, 1e6);
            if (ex->ops->test(ex->self, rq)) c->out.test_before_wait = 1;
            CALL_OK(c, ex->ops->wait(ex->self, rq, &r));
        }
        c->out.bytes_sent[w] += r.bytes_sent;
        uint8_t mine = (uint8_t)(10 * w + i), all[N];
        CALL_OK(c, ex->ops->allgather(ex->self, world, w, &mine, all, 1, 1, &r));
        for (int k = 0; k < N; k++)
            if (all[k] != 10 * k + i) c->out.gather_ok = 0;
    }
    int pair[2] = {w & 1, (w & 1) + 2}; /* {0,2} and {1,3} */
    exchange_group *g = ex->ops->group(ex->self, pair, 2);
    if (g != ex->ops->group(ex->self, pair, 2)) c->out.group_same = 0;
    CALL_OK(c, ex->ops->allreduce(ex->self, g, w >> 1, NULL, 1000, 4000, &r));
    c->out.end_s[w] = r.end_s;
}

static void ssp(run_ctx *c, int w) {
    const exchange *ex = c->ex;
    exchange_result r;
    for (long step = 1; step <= 5; step++) {
        long gap = ex->ops->clock_wait(ex->self, w, 1);
        if (gap > c->out.max_gap) c->out.max_gap = gap;
        sg_actor_sleep_for(w == 0 ? 0.01 : 0.001); /* worker 0 is the slow one */
        CALL_OK(c, ex->ops->ps_push(ex->self, w, NULL, 1000, 4000, step, &r));
        CALL_OK(c, ex->ops->ps_pull(ex->self, w, NULL, 1000, 4000, step, &r));
        ex->ops->clock_advance(ex->self, w, step, &c->out.rounds);
    }
    ex->ops->clock_advance(ex->self, w, EXCHANGE_CLOCK_DONE, NULL);
    c->out.end_s[w] = ex->ops->now(ex->self);
}

static void worker(void *p) {
    worker_arg *a = p;
    if (a->ctx->mode == 2)
        ssp(a->ctx, a->rank);
    else
        collectives(a->ctx, a->rank);
}

/* The simulation of this process: N workers and 2 servers on a generated star. */
static int open_star(sim_cluster **cl) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/ss_test_exchange_%d.xml", (int)getpid());
    platform_gen_spec s = platform_gen_default();
    s.n_hosts = N;
    s.n_ps = 2;
    FILE *fp = fopen(path, "w");
    if (!fp) return ss_error_set(SS_EIO, "%s: cannot write", path);
    int rc = platform_generate(&s, fp);
    fclose(fp);
    sim_cluster_opts o = {.platform_path = path, .n_workers = N, .n_ps = 2};
    if (rc == SS_OK) rc = sim_cluster_open(&o, cl);
    unlink(path);
    return rc;
}

static int run_exchange(void *arg, isolate_blob *out) {
    sim_cluster *cl;
    int rc = open_star(&cl);
    if (rc != SS_OK) return rc;
    run_ctx c = {.mode = *(const int *)arg,
                 .out = {.gather_ok = 1, .group_same = 1, .calls_ok = 1}};
    exchange_simgrid_opts xo = {.coll = {.algo = SIM_ALLREDUCE_RING}};
    if ((rc = exchange_simgrid_open(cl, &xo, &c.ex)) != SS_OK) return rc;
    exchange_ps_opts po = {.n_servers = 2, .async = 1, .hooks = {&c, on_push, on_pull}};
    if (c.mode == 2 && (rc = c.ex->ops->ps_start(c.ex->self, &po)) != SS_OK) return rc;
    worker_arg args[N];
    for (int w = 0; w < N; w++) {
        args[w] = (worker_arg){&c, w};
        sim_actor_spawn("worker", w, sim_cluster_worker_host(cl, w), worker, &args[w]);
    }
    double end;
    if ((rc = sim_cluster_simulate(cl, &end)) != SS_OK) return rc;
    exchange_simgrid_close(c.ex);
    isolate_blob_append(out, &c.out, sizeof c.out);
    return SS_OK;
}

static case_out run_mode(int mode) {
    isolate_blob b = {0};
    int rc = isolate_call(run_exchange, &mode, &b);
    if (rc != SS_OK) fprintf(stderr, "\n  %s\n", ss_error_message());
    CU_ASSERT_FATAL(rc == SS_OK && b.bytes == sizeof(case_out));
    case_out o;
    memcpy(&o, b.data, sizeof o);
    isolate_blob_free(&b);
    return o;
}

static void test_collectives(void) {
    case_out blocking = run_mode(0), started = run_mode(1);
    CU_ASSERT(blocking.calls_ok && started.calls_ok);
    CU_ASSERT(blocking.gather_ok && started.gather_ok);
    CU_ASSERT(blocking.group_same && started.group_same);
    CU_ASSERT(!started.test_before_wait);
    for (int w = 0; w < N; w++) {
        CU_ASSERT(blocking.end_s[w] > 0);
        CU_ASSERT_EQUAL(blocking.end_s[w], started.end_s[w]); /* same messages, same moments */
        CU_ASSERT_EQUAL(blocking.bytes_sent[w], started.bytes_sent[w]);
        SS_CHECK_CLOSE(blocking.bytes_sent[w], 3 * 2.0 * (N - 1) / N * 1e6, 4, 0);
    }
}

static void test_staleness_and_ps(void) {
    case_out o = run_mode(2);
    CU_ASSERT(o.calls_ok);
    CU_ASSERT(o.max_gap <= 1);
    CU_ASSERT(o.max_gap == 1); /* the fast workers do run ahead of the slow one */
    CU_ASSERT_EQUAL(o.rounds, 5);
    CU_ASSERT_EQUAL(o.pushes, N * 5 * 2); /* every push reaches both servers */
    CU_ASSERT_EQUAL(o.pulls, N * 5 * 2);
    for (int w = 1; w < N; w++)
        CU_ASSERT(o.end_s[w] <= o.end_s[0] + 1e-12); /* nobody ends after the slow worker */
}

/* One row of the conformance table (exchange_cases.h) in a simulation of its own: the star of
 * open_star, the ring all-reduce. */
static int run_case(void *arg, isolate_blob *out) {
    const exchange_case *row = &exchange_cases[*(const int *)arg];
    sim_cluster *cl;
    int rc = open_star(&cl);
    if (rc != SS_OK) return rc;
    case_state c = {.n_servers = 2};
    exchange_simgrid_opts xo = {.coll = {.algo = SIM_ALLREDUCE_RING}};
    if ((rc = exchange_simgrid_open(cl, &xo, &c.ex)) != SS_OK) return rc;
    exchange_ps_opts po = case_ps_opts(&c);
    if (row->ps && (rc = c.ex->ops->ps_start(c.ex->self, &po)) != SS_OK) return rc;
    case_run run = {&c, row};
    exchange_hosted hosted;
    rc = c.ex->ops->run_workers(c.ex->self, CASE_WORKERS, case_worker, &run, &hosted);
    exchange_simgrid_close(c.ex);
    if (rc != SS_OK) return rc;
    CASE_CHECK(&c, -1, hosted.first_worker == 0 && hosted.n_here == CASE_WORKERS);
    c.ex = NULL;
    isolate_blob_append(out, &c, sizeof c);
    return SS_OK;
}

static void test_conformance(void) {
    for (int i = 0; i < EXCHANGE_CASE_COUNT; i++) {
        isolate_blob b = {0};
        int rc = isolate_call(run_case, &i, &b);
        if (rc != SS_OK)
            fprintf(stderr, "\n  %s: %s\n", exchange_cases[i].name, ss_error_message());
        CU_ASSERT_FATAL(rc == SS_OK && b.bytes == sizeof(case_state));
        case_state c;
        memcpy(&c, b.data, sizeof c);
        isolate_blob_free(&b);
        if (c.failures) fprintf(stderr, "\n  %s: %s\n", exchange_cases[i].name, c.first);
        CU_ASSERT_EQUAL(c.failures, 0);
        if (exchange_cases[i].ps && exchange_cases[i].worker == case_ps_hooks) {
            /* each server's hook saw each worker's push and pull of both rounds */
            CU_ASSERT_EQUAL(c.pushes, 2 * CASE_WORKERS * 2);
            CU_ASSERT_EQUAL(c.pulls, 2 * CASE_WORKERS * 2);
        }
    }
}

static CU_TestInfo exchange_tests[] = {
    {"conformance table (exchange_cases.h) on the SimGrid backend", test_conformance},
    {"blocking and non-blocking all-reduce, all-gather, groups", test_collectives},
    {"staleness bound, PS hooks", test_staleness_and_ps},
    CU_TEST_INFO_NULL};

int main(void) {
    CU_SuiteInfo suites[] = {{"exchange_simgrid", NULL, NULL, NULL, NULL, exchange_tests},
                             CU_SUITE_INFO_NULL};
    return ss_test_main(suites);
}
