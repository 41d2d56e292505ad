/* The MPI exchange (sim/exchange/exchange_mpi.h). Every rank runs this program under
 *     mpirun -np 5 --oversubscribe --allow-run-as-root --mca btl self,tcp test_exchange_mpi
 * (4 workers + 1 server; -np 6: 2 servers); alone, only the cases that need no mpirun run and
 * the others pass as skipped. Each case opens its own exchange; the values are small integers in
 * floats, so every sum is exact. */
#include "common/mpi_api.h"
#include "common/status.h"
#include "sim/exchange/exchange_mpi.h"
#include "exchange_cases.h"
#include "ss_test.h"

#include <stdint.h>

#define N_WORKERS 4
#define PS_LEN    11 /* an odd length: shards of unequal sizes over 2 servers */

static int under_mpirun;
static int world_rank, world_size;

#define NEED_MPI()                                                                                 \
    do {                                                                                           \
        if (!under_mpirun) SS_SKIP("not started by mpirun");                                       \
    } while (0)

static exchange *open_exchange(void) {
    exchange_mpi_opts o = {.n_workers = N_WORKERS, .n_servers = world_size - N_WORKERS};
    exchange *ex = NULL;
    int rc = exchange_mpi_open(&o, &ex);
    if (rc != SS_OK) fprintf(stderr, "\n  rank %d: %s\n", world_rank, ss_error_message());
    CU_ASSERT_FATAL(rc == SS_OK);
    return ex;
}

static int n_servers(void) {
    return world_size - N_WORKERS;
}

/* ---------------------------------------------------------------- without mpirun */

static void test_open_outside_mpirun(void) {
    /* the launcher's variables hidden, as when syncsim is started alone */
    char *size = getenv("OMPI_COMM_WORLD_SIZE"), *pmix = getenv("PMIX_RANK");
    char *size_copy = size ? strdup(size) : NULL, *pmix_copy = pmix ? strdup(pmix) : NULL;
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMIX_RANK");
    CU_ASSERT(!mpi_api_under_launcher());
    exchange_mpi_opts o = {.n_workers = 4, .n_servers = 1};
    exchange *ex = (exchange *)&o;
    int rc = exchange_mpi_open(&o, &ex);
    CU_ASSERT_PTR_NULL(ex);
    if (mpi_api_compiled()) {
        CU_ASSERT_EQUAL(rc, SS_EUSAGE);
        CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "mpirun -np 5"));
        CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "4 workers + 1 servers"));
    } else {
        CU_ASSERT_EQUAL(rc, SS_EIO);
        CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "built without OpenMPI"));
    }
    if (size_copy) setenv("OMPI_COMM_WORLD_SIZE", size_copy, 1);
    if (pmix_copy) setenv("PMIX_RANK", pmix_copy, 1);
    free(size_copy);
    free(pmix_copy);
}

static void test_bad_options(void) {
    exchange_mpi_opts o = {.n_workers = 0, .n_servers = 1};
    exchange *ex = NULL;
    CU_ASSERT_EQUAL(exchange_mpi_open(&o, &ex), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "0 workers"));
}

/* ---------------------------------------------------------------- under mpirun */

static void test_world_size_mismatch(void) {
    NEED_MPI();
    exchange_mpi_opts o = {.n_workers = world_size - 2, .n_servers = 1};
    exchange *ex = NULL;
    CU_ASSERT_EQUAL(exchange_mpi_open(&o, &ex), SS_EUSAGE);
    char want[160];
    snprintf(want, sizeof want,
             "mpirun -np %d started %d ranks; --workers %d with 1 servers needs %d", world_size,
             world_size, world_size - 2, world_size - 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), want));
}

static void test_roles(void) {
    NEED_MPI();
    exchange *ex = open_exchange();
    CU_ASSERT_EQUAL(exchange_mpi_rank(ex), world_rank);
    CU_ASSERT_EQUAL(exchange_mpi_is_server(ex), world_rank >= N_WORKERS);
    CU_ASSERT_STRING_EQUAL(ex->ops->name, "mpi");
    double t = ex->ops->now(ex->self);
    CU_ASSERT(t >= 0);
    /* real time: no modelled host to time layers on, and a compute of no slowdown waits nothing */
    sim_compute_cfg cc = {.mode = SIM_COMPUTE_TRACE, .scale = 1};
    sim_layer_cost layer = {.fwd_flops = 1e9, .bwd_flops = 2e9};
    double fwd, bwd, opt;
    CU_ASSERT_EQUAL(ex->ops->layer_times(ex->self, 0, &cc, &layer, 1, &fwd, &bwd, &opt), SS_EUSAGE);
    sim_step_cost cost = {.trace_s = 3600, .slowdown = 1};
    CU_ASSERT_EQUAL(ex->ops->compute(ex->self, 0, &cc, &cost, ex->ops->now(ex->self)), SS_OK);
    CU_ASSERT(ex->ops->now(ex->self) - t < 600);
    exchange_mpi_close(ex);
}

static void test_allreduce_world(void) {
    NEED_MPI();
    exchange *ex = open_exchange();
    int w = world_rank;
    if (w < N_WORKERS) {
        exchange_group *g = ex->ops->group(ex->self, NULL, N_WORKERS);
        float buf[5];
        for (int i = 0; i < 5; i++)
            buf[i] = (float)(w + i);
        exchange_result r = {0};
        CU_ASSERT_EQUAL(ex->ops->allreduce(ex->self, g, w, buf, 5, 100.0, &r), SS_OK);
        for (int i = 0; i < 5; i++) /* sum over w of (w + i) */
            CU_ASSERT_EQUAL(buf[i], (float)(6 + 4 * i));
        /* the ring's volume: 2 (m - 1) chunks of 100 / 4 bytes */
        CU_ASSERT_EQUAL(r.bytes_sent, 150.0);
        CU_ASSERT_EQUAL(r.bytes_recv, 150.0);
        CU_ASSERT(r.end_s >= r.start_s && r.start_s >= 0);
        /* NULL: `count` floats of scratch */
        CU_ASSERT_EQUAL(ex->ops->allreduce(ex->self, g, w, NULL, 1000, 4000.0, &r), SS_OK);
        CU_ASSERT_EQUAL(r.bytes_sent, 6000.0);
    }
    exchange_mpi_close(ex);
}

/* Each worker makes its pair's group while the other pair makes theirs. */
static void pair_allreduce(exchange *ex, int a, int b) {
    int w = world_rank, pair[2] = {a < b ? a : b, a < b ? b : a};
    exchange_group *g = ex->ops->group(ex->self, pair, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_PTR_EQUAL(ex->ops->group(ex->self, pair, 2), g); /* cached by list */
    int member = w == pair[0] ? 0 : 1;
    float buf[3] = {(float)(w + 1), (float)(10 * (w + 1)), 1};
    exchange_result r = {0};
    CU_ASSERT_EQUAL(ex->ops->allreduce(ex->self, g, member, buf, 3, 8.0, &r), SS_OK);
    CU_ASSERT_EQUAL(buf[0], (float)(pair[0] + pair[1] + 2));
    CU_ASSERT_EQUAL(buf[1], (float)(10 * (pair[0] + pair[1] + 2)));
    CU_ASSERT_EQUAL(buf[2], 2.0f);
    CU_ASSERT_EQUAL(r.bytes_sent, 8.0); /* 2 (2 - 1) x 4 bytes */
}

static void test_allreduce_pairs(void) {
    NEED_MPI();
    exchange *ex = open_exchange();
    int w = world_rank;
    if (w < N_WORKERS) {
        pair_allreduce(ex, w, w ^ 1);                               /* {0,1} {2,3} */
        pair_allreduce(ex, w, (w % 2) ? (w + 1) % 4 : (w + 3) % 4); /* {1,2} {3,0} */
        int three[3] = {0, 1, 3};
        if (w != 2) { /* a group of three while worker 2 makes none */
            exchange_group *g = ex->ops->group(ex->self, three, 3);
            float v = (float)w;
            CU_ASSERT_EQUAL(ex->ops->allreduce(ex->self, g, w == 3 ? 2 : w, &v, 1, 4, NULL), SS_OK);
            CU_ASSERT_EQUAL(v, 4.0f);
        }
    }
    exchange_mpi_close(ex);
}

static void test_allreduce_nonblocking(void) {
    NEED_MPI();
    exchange *ex = open_exchange();
    int w = world_rank;
    if (w < N_WORKERS) {
        exchange_group *g = ex->ops->group(ex->self, NULL, N_WORKERS);
        enum { K = 16, LEN = 300 };
        static float bufs[K][LEN];
        exchange_request *rq[K];
        for (int k = 0; k < K; k++) {
            for (int i = 0; i < LEN; i++)
                bufs[k][i] = (float)(k * (w + 1) + i);
            rq[k] = ex->ops->allreduce_start(ex->self, g, w, bufs[k], LEN, LEN * 4.0);
        }
        /* a 17th on the group is refused at once */
        exchange_request *extra = ex->ops->allreduce_start(ex->self, g, w, NULL, 4, 16.0);
        CU_ASSERT_EQUAL(ex->ops->test(ex->self, extra), 1);
        CU_ASSERT_EQUAL(ex->ops->wait(ex->self, extra, NULL), SS_EUSAGE);
        CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "in flight"));
        for (int k = K - 1; k >= 0; k--) { /* completed in any order */
            while (k % 2 && !ex->ops->test(ex->self, rq[k])) {
            }
            exchange_result r = {0};
            CU_ASSERT_EQUAL(ex->ops->wait(ex->self, rq[k], &r), SS_OK);
            CU_ASSERT(r.end_s >= r.start_s);
            CU_ASSERT_EQUAL(r.bytes_sent, 2 * 3 * 300.0);
            int ok = 1;
            for (int i = 0; i < LEN; i++) /* sum over w of k (w + 1) + i */
                ok &= bufs[k][i] == (float)(10 * k + 4 * i);
            CU_ASSERT(ok);
        }
    }
    exchange_mpi_close(ex);
}

static void test_allgather(void) {
    NEED_MPI();
    exchange *ex = open_exchange();
    int w = world_rank;
    if (w < N_WORKERS) {
        exchange_group *g = ex->ops->group(ex->self, NULL, N_WORKERS);
        uint8_t mine[2] = {(uint8_t)w, (uint8_t)(2 * w + 1)}, all[8] = {0};
        exchange_result r = {0};
        CU_ASSERT_EQUAL(ex->ops->allgather(ex->self, g, w, mine, all, 2, 1.0, &r), SS_OK);
        for (int i = 0; i < N_WORKERS; i++) {
            CU_ASSERT_EQUAL(all[2 * i], i);
            CU_ASSERT_EQUAL(all[2 * i + 1], 2 * i + 1);
        }
        CU_ASSERT_EQUAL(r.bytes_sent, 3.0); /* Bruck over 4: 1 part, then 2 */
        CU_ASSERT_EQUAL(ex->ops->allgather(ex->self, g, w, NULL, NULL, 0, 1.0, &r), SS_OK);
    }
    exchange_mpi_close(ex);
}

static void test_broadcast(void) {
    NEED_MPI();
    exchange *ex = open_exchange();
    int w = world_rank;
    if (w < N_WORKERS) {
        exchange_group *g = ex->ops->group(ex->self, NULL, N_WORKERS);
        float buf[3] = {0, 0, 0};
        if (w == 2) buf[0] = 7, buf[1] = 8, buf[2] = 9;
        exchange_result r = {0};
        CU_ASSERT_EQUAL(ex->ops->broadcast(ex->self, g, w, 2, buf, 3, 12.0, &r), SS_OK);
        CU_ASSERT(buf[0] == 7 && buf[1] == 8 && buf[2] == 9);
        /* binomial tree from 2: the root sends twice, relative rank 2 (worker 0) once */
        double sent = w == 2 ? 24.0 : w == 0 ? 12.0 : 0.0;
        CU_ASSERT_EQUAL(r.bytes_sent, sent);
        CU_ASSERT_EQUAL(r.bytes_recv, w == 2 ? 0.0 : 12.0);
    }
    exchange_mpi_close(ex);
}

static void test_send_recv_order(void) {
    NEED_MPI();
    exchange *ex = open_exchange();
    int w = world_rank;
    if (w < N_WORKERS) {
        exchange_group *g = ex->ops->group(ex->self, NULL, N_WORKERS);
        exchange_result r = {0};
        if (w == 0) {
            /* a non-blocking message to 1 before the blocking ones: matched apart */
            float early = 100;
            exchange_request *q = ex->ops->send_start(ex->self, g, 0, 1, &early, 1, 4.0);
            for (int k = 1; k <= 3; k++) {
                float v[2] = {(float)k, (float)(10 * k)};
                CU_ASSERT_EQUAL(ex->ops->send(ex->self, g, 0, 1, v, 2, 8.0, &r), SS_OK);
                CU_ASSERT_EQUAL(r.bytes_sent, 8.0);
            }
            CU_ASSERT_EQUAL(ex->ops->wait(ex->self, q, &r), SS_OK);
            CU_ASSERT_EQUAL(r.bytes_sent, 4.0);
        } else if (w == 1) {
            for (int k = 1; k <= 3; k++) {
                float v[2] = {0, 0};
                CU_ASSERT_EQUAL(ex->ops->recv(ex->self, g, 1, 0, v, 2, 8.0, &r), SS_OK);
                CU_ASSERT(v[0] == (float)k && v[1] == (float)(10 * k));
                CU_ASSERT_EQUAL(r.bytes_recv, 8.0);
            }
            float early = 0;
            exchange_request *q = ex->ops->recv_start(ex->self, g, 1, 0, &early, 1, 4.0);
            CU_ASSERT_EQUAL(ex->ops->wait(ex->self, q, &r), SS_OK);
            CU_ASSERT_EQUAL(early, 100.0f);
            CU_ASSERT_EQUAL(r.bytes_recv, 4.0);
        }
    }
    exchange_mpi_close(ex);
}

static void test_fan_out(void) {
    NEED_MPI();
    exchange *ex = open_exchange();
    int w = world_rank;
    if (w < N_WORKERS) {
        exchange_group *g = ex->ops->group(ex->self, NULL, N_WORKERS);
        if (w == 1) { /* one sender, three receivers at once, two messages each */
            static float out[N_WORKERS][2][64];
            exchange_request *q[2 * N_WORKERS];
            int n = 0;
            for (int k = 0; k < 2; k++)
                for (int d = 0; d < N_WORKERS; d++) {
                    if (d == 1) continue;
                    for (int i = 0; i < 64; i++)
                        out[d][k][i] = (float)(1000 * k + 10 * d + i);
                    q[n++] = ex->ops->send_start(ex->self, g, 1, d, out[d][k], 64, 256.0);
                }
            for (int i = 0; i < n; i++)
                CU_ASSERT_EQUAL(ex->ops->wait(ex->self, q[i], NULL), SS_OK);
        } else {
            float in[2][64];
            exchange_request *q[2];
            for (int k = 0; k < 2; k++)
                q[k] = ex->ops->recv_start(ex->self, g, w, 1, in[k], 64, 256.0);
            for (int k = 1; k >= 0; k--) {
                while (!ex->ops->test(ex->self, q[k])) {
                }
                CU_ASSERT_EQUAL(ex->ops->wait(ex->self, q[k], NULL), SS_OK);
            }
            int ok = 1;
            for (int k = 0; k < 2; k++)
                for (int i = 0; i < 64; i++)
                    ok &= in[k][i] == (float)(1000 * k + 10 * w + i);
            CU_ASSERT(ok); /* in start order per pair */
        }
    }
    exchange_mpi_close(ex);
}

/* ---------------------------------------------------------------- parameter servers */

/* The server side of the asynchronous test: every worker's push lands in its own vector; the
 * pull vector of server s holds 1000 (s + 1) + i. */
typedef struct ps_probe {
    float push[N_WORKERS][PS_LEN];
    float pull[PS_LEN];
    int pushes_ok, pushes, pulls;
} ps_probe;

static size_t shard_start(int s, int k) {
    int b = PS_LEN / k, r = PS_LEN % k;
    return (size_t)(s * b + (s < r ? s : r));
}

static int owner_of(int i, int k) {
    int s = 0;
    while (s + 1 < k && (size_t)i >= shard_start(s + 1, k))
        s++;
    return s;
}

static float *probe_push_buffer(void *ctx, int server, int worker) {
    (void)server;
    return ((ps_probe *)ctx)->push[worker];
}

static float *probe_pull_buffer(void *ctx, int server) {
    ps_probe *p = ctx;
    for (int i = 0; i < PS_LEN; i++)
        p->pull[i] = (float)(1000 * (server + 1) + i);
    return p->pull;
}

static void probe_on_push(void *ctx, int server, int worker, int64_t round, const void *payload) {
    ps_probe *p = ctx;
    p->pushes++;
    int ok = payload == p->push[worker];
    int k = n_servers();
    size_t end = server + 1 == k ? PS_LEN : shard_start(server + 1, k);
    for (size_t i = shard_start(server, k); i < end; i++)
        ok &= p->push[worker][i] == (float)(100 * worker + (int)i + (int)round);
    p->pushes_ok += ok;
}

static void probe_on_pull(void *ctx, int server, int worker, int64_t round) {
    (void)server;
    (void)worker;
    (void)round;
    ((ps_probe *)ctx)->pulls++;
}

static void test_ps_async(void) {
    NEED_MPI();
    exchange *ex = open_exchange();
    static ps_probe probe;
    memset(&probe, 0, sizeof probe);
    exchange_ps_opts o = {.n_servers = n_servers(), .async = 1};
    o.hooks = (exchange_ps_hooks){&probe, probe_on_push, probe_on_pull, probe_push_buffer,
                                  probe_pull_buffer};
    CU_ASSERT_EQUAL_FATAL(ex->ops->ps_start(ex->self, &o), SS_OK);
    int w = world_rank;
    if (exchange_mpi_is_server(ex)) {
        CU_ASSERT_EQUAL(exchange_mpi_serve(ex), SS_OK);
        CU_ASSERT_EQUAL(probe.pushes, 2 * N_WORKERS); /* rounds 3 and 4 */
        CU_ASSERT_EQUAL(probe.pushes_ok, 2 * N_WORKERS);
        CU_ASSERT_EQUAL(probe.pulls, 2 * N_WORKERS);
    } else {
        for (int round = 3; round <= 4; round++) {
            float buf[PS_LEN];
            for (int i = 0; i < PS_LEN; i++)
                buf[i] = (float)(100 * w + i + round);
            exchange_result r = {0};
            int rc = round == 3 ? ex->ops->ps_push(ex->self, w, buf, PS_LEN, 44.0, round, &r)
                                : ex->ops->ps_push_pull(ex->self, w, buf, PS_LEN, 44.0, round, &r);
            CU_ASSERT_EQUAL(rc, SS_OK);
            CU_ASSERT_EQUAL(r.bytes_sent, 44.0);
            if (round == 3) {
                CU_ASSERT_EQUAL(ex->ops->ps_pull(ex->self, w, buf, PS_LEN, 44.0, round, &r), SS_OK);
                CU_ASSERT_EQUAL(r.bytes_sent, 0.0);
            }
            CU_ASSERT_EQUAL(r.bytes_recv, 44.0);
            int ok = 1; /* each shard from its server's pull buffer */
            for (int i = 0; i < PS_LEN; i++)
                ok &= buf[i] == (float)(1000 * (owner_of(i, n_servers()) + 1) + i);
            CU_ASSERT(ok);
        }
        CU_ASSERT_EQUAL(exchange_mpi_worker_done(ex, w), SS_OK);
    }
    exchange_mpi_close(ex);
}

static void test_ps_sync(void) {
    NEED_MPI();
    exchange *ex = open_exchange();
    exchange_ps_opts o = {.n_servers = n_servers(), .async = 0};
    CU_ASSERT_EQUAL_FATAL(ex->ops->ps_start(ex->self, &o), SS_OK);
    int w = world_rank;
    if (exchange_mpi_is_server(ex)) {
        CU_ASSERT_EQUAL(exchange_mpi_serve(ex), SS_OK);
    } else {
        exchange_group *g = ex->ops->group(ex->self, NULL, N_WORKERS);
        for (int round = 0; round < 4; round++) {
            float buf[PS_LEN];
            for (int i = 0; i < PS_LEN; i++)
                buf[i] = (float)((w + 1) * (i + 1) * (round + 1));
            /* worker 3 pushes only once worker 0 has pulled: that pull must wait for it */
            if (w == 3) CU_ASSERT_EQUAL(ex->ops->recv(ex->self, g, 3, 0, NULL, 1, 4, NULL), SS_OK);
            if (round % 2) {
                if (w == 0)
                    CU_ASSERT_EQUAL(ex->ops->send(ex->self, g, 0, 3, NULL, 1, 4, NULL), SS_OK);
                CU_ASSERT_EQUAL(ex->ops->ps_push_pull(ex->self, w, buf, PS_LEN, 44, round, NULL),
                                SS_OK);
            } else {
                CU_ASSERT_EQUAL(ex->ops->ps_push(ex->self, w, buf, PS_LEN, 44, round, NULL), SS_OK);
                if (w == 0)
                    CU_ASSERT_EQUAL(ex->ops->send(ex->self, g, 0, 3, NULL, 1, 4, NULL), SS_OK);
                CU_ASSERT_EQUAL(ex->ops->ps_pull(ex->self, w, buf, PS_LEN, 44, round, NULL), SS_OK);
            }
            int ok = 1; /* the sum over the workers: 10 (i + 1) (round + 1) */
            for (int i = 0; i < PS_LEN; i++)
                ok &= buf[i] == (float)(10 * (i + 1) * (round + 1));
            CU_ASSERT(ok);
        }
        CU_ASSERT_EQUAL(exchange_mpi_worker_done(ex, w), SS_OK);
    }
    exchange_mpi_close(ex);
}

/* ---------------------------------------------------------------- SSP's clocks */

static void test_clock_wait(void) {
    NEED_MPI();
    exchange *ex = open_exchange();
    exchange_ps_opts o = {.n_servers = n_servers(), .async = 1};
    CU_ASSERT_EQUAL_FATAL(ex->ops->ps_start(ex->self, &o), SS_OK);
    int w = world_rank;
    if (exchange_mpi_is_server(ex)) {
        CU_ASSERT_EQUAL(exchange_mpi_serve(ex), SS_OK);
    } else {
        exchange_group *g = ex->ops->group(ex->self, NULL, N_WORKERS);
        long rounds = 7;
        if (w >= 2) ex->ops->clock_advance(ex->self, w, EXCHANGE_CLOCK_DONE, &rounds);
        if (w == 0) {
            /* three steps ahead of worker 1 (clock 0), bound 1: goes on once worker 1 is at 2 */
            ex->ops->clock_advance(ex->self, 0, 3, &rounds);
            CU_ASSERT_EQUAL(ex->ops->send(ex->self, g, 0, 1, NULL, 1, 4, NULL), SS_OK);
            CU_ASSERT_EQUAL(ex->ops->clock_wait(ex->self, 0, 1), 1);
            CU_ASSERT_EQUAL(ex->ops->clock_wait(ex->self, 0, -1), 1); /* never blocks */
            CU_ASSERT_EQUAL(ex->ops->send(ex->self, g, 0, 1, NULL, 1, 4, NULL), SS_OK);
        } else if (w == 1) {
            /* worker 0 has told it is at 3 (and about to wait): step 1 leaves a gap of 2 */
            CU_ASSERT_EQUAL(ex->ops->recv(ex->self, g, 1, 0, NULL, 1, 4, NULL), SS_OK);
            ex->ops->clock_advance(ex->self, 1, 1, &rounds);
            CU_ASSERT_EQUAL(ex->ops->clock_wait(ex->self, 1, 0), 0); /* the slowest */
            ex->ops->clock_advance(ex->self, 1, 2, &rounds);
            /* worker 0 went on: it saw a gap of 1, i.e. this worker at 2 */
            CU_ASSERT_EQUAL(ex->ops->recv(ex->self, g, 1, 0, NULL, 1, 4, NULL), SS_OK);
            CU_ASSERT_EQUAL(ex->ops->clock_wait(ex->self, 1, 0), 0);
        }
        CU_ASSERT_EQUAL(rounds, 7); /* left untouched: see exchange_mpi.h */
        CU_ASSERT_EQUAL(exchange_mpi_worker_done(ex, w), SS_OK);
    }
    exchange_mpi_close(ex);
}

/* ---------------------------------------------------------------- errors */

static void expect_usage(int rc, const char *words) {
    CU_ASSERT_EQUAL(rc, SS_EUSAGE);
    if (!strstr(ss_error_message(), words))
        fprintf(stderr, "\n  message \"%s\" lacks \"%s\"\n", ss_error_message(), words);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), words));
}

static void worker_errors(exchange *ex, int w) {
    const exchange_ops *op = ex->ops;
    int none[1] = {0}, out[2] = {w, 7}, other[1] = {(w + 1) % N_WORKERS};
    CU_ASSERT_PTR_NULL(op->group(ex->self, none, 0));
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "0 members"));
    CU_ASSERT_PTR_NULL(op->group(ex->self, out, 2));
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "member 1 is 7"));
    CU_ASSERT_PTR_NULL(op->group(ex->self, other, 1));
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "not in"));
    exchange_group *g = op->group(ex->self, NULL, N_WORKERS);
    float v[4] = {0};
    expect_usage(op->allreduce(ex->self, NULL, w, v, 4, 16, NULL), "no group");
    expect_usage(op->allreduce(ex->self, g, (w + 1) % 4, v, 4, 16, NULL), "member");
    expect_usage(op->allreduce(ex->self, g, 4, v, 4, 16, NULL), "group of 4");
    expect_usage(op->send(ex->self, g, w, w, v, 4, 16, NULL), "peer");
    expect_usage(op->recv(ex->self, g, w, 9, v, 4, 16, NULL), "peer 9");
    expect_usage(op->broadcast(ex->self, g, w, 9, v, 4, 16, NULL), "root 9");
    exchange_request *q = op->allreduce_start(ex->self, g, 5, v, 4, 16);
    CU_ASSERT_EQUAL(op->test(ex->self, q), 1);
    expect_usage(op->wait(ex->self, q, NULL), "member 5");
    q = op->send_start(ex->self, g, w, -1, v, 4, 16);
    expect_usage(op->wait(ex->self, q, NULL), "peer -1");
    expect_usage(op->ps_push(ex->self, w, v, 4, 16, 0, NULL), "ps_start was not called");
    exchange_ps_opts o = {.n_servers = n_servers() + 1};
    expect_usage(op->ps_start(ex->self, &o), "server ranks");
    o.n_servers = n_servers();
    CU_ASSERT_EQUAL(op->ps_start(ex->self, &o), SS_OK);
    expect_usage(op->ps_push(ex->self, (w + 1) % 4, v, 4, 16, 0, NULL), "worker");
    expect_usage(op->ps_pull(ex->self, w, v, 4, -1, 0, NULL), "bytes");
    expect_usage(exchange_mpi_serve(ex), "is a worker");
}

static void test_errors(void) {
    NEED_MPI();
    exchange *ex = open_exchange();
    if (exchange_mpi_is_server(ex)) {
        CU_ASSERT_PTR_NULL(ex->ops->group(ex->self, NULL, N_WORKERS));
        CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "is a server"));
        expect_usage(exchange_mpi_serve(ex), "ps_start was not called");
        expect_usage(exchange_mpi_worker_done(ex, world_rank), "worker_done");
    } else {
        worker_errors(ex, world_rank);
    }
    exchange_mpi_close(ex);
}

/* ---------------------------------------------------------------- side channel */

static void test_side_channel(void) {
    NEED_MPI();
    exchange *ex = open_exchange();
    CU_ASSERT_EQUAL(exchange_mpi_barrier(ex), SS_OK);
    uint8_t mine[16];
    memset(mine, world_rank, sizeof mine);
    size_t counts[16] = {0};
    void *all = NULL;
    CU_ASSERT_EQUAL(exchange_mpi_gather_bytes(ex, mine, (size_t)world_rank, &all, counts), SS_OK);
    if (world_rank == 0) {
        const uint8_t *a = all;
        int ok = 1;
        for (int r = 0, at = 0; r < world_size; at += r, r++) {
            ok &= counts[r] == (size_t)r;
            for (int i = 0; i < r; i++)
                ok &= a[at + i] == r;
        }
        CU_ASSERT(ok);
    } else {
        CU_ASSERT_PTR_NULL(all);
    }
    free(all);
    double v[2] = {world_rank, 2.0 * world_rank};
    CU_ASSERT_EQUAL(exchange_mpi_allreduce_doubles(ex, v, 2, 0), SS_OK);
    CU_ASSERT_EQUAL(v[0], world_size * (world_size - 1) / 2.0);
    v[0] = world_rank;
    CU_ASSERT_EQUAL(exchange_mpi_allreduce_doubles(ex, v, 1, 1), SS_OK);
    CU_ASSERT_EQUAL(v[0], world_size - 1.0);
    exchange_mpi_close(ex);
}

/* ---------------------------------------------------------------- the conformance table */

/* Every row of exchange_cases.h over MPI: the worker ranks run the row's worker through
 * run_workers; the server ranks serve the rows with parameter servers and sit the others out. */
static void test_conformance(void) {
    NEED_MPI();
    CU_ASSERT_EQUAL_FATAL(N_WORKERS, CASE_WORKERS);
    for (int i = 0; i < EXCHANGE_CASE_COUNT; i++) {
        const exchange_case *row = &exchange_cases[i];
        case_state c = {.ex = open_exchange(), .n_servers = n_servers()};
        exchange_ps_opts po = case_ps_opts(&c);
        if (row->ps) CU_ASSERT_EQUAL_FATAL(c.ex->ops->ps_start(c.ex->self, &po), SS_OK);
        if (row->ps || !exchange_mpi_is_server(c.ex)) {
            case_run run = {&c, row};
            exchange_hosted hosted;
            CU_ASSERT_EQUAL(
                c.ex->ops->run_workers(c.ex->self, CASE_WORKERS, case_worker, &run, &hosted),
                SS_OK);
            CU_ASSERT_EQUAL(hosted.n_here, exchange_mpi_is_server(c.ex) ? 0 : 1);
            if (hosted.n_here) CU_ASSERT_EQUAL(hosted.first_worker, world_rank);
        }
        if (c.failures) fprintf(stderr, "\n  rank %d, %s: %s\n", world_rank, row->name, c.first);
        CU_ASSERT_EQUAL(c.failures, 0);
        if (row->worker == case_ps_hooks && exchange_mpi_is_server(c.ex)) {
            /* this server's hook saw each worker's push and pull of both rounds */
            CU_ASSERT_EQUAL(c.pushes, 2 * CASE_WORKERS);
            CU_ASSERT_EQUAL(c.pulls, 2 * CASE_WORKERS);
        }
        exchange_mpi_close(c.ex);
    }
}

static CU_TestInfo tests[] = {
    {"conformance table (exchange_cases.h) on the MPI backend", test_conformance},
    {"open outside mpirun: says to use mpirun", test_open_outside_mpirun},
    {"open: bad options", test_bad_options},
    {"open: world size must be workers + servers", test_world_size_mismatch},
    {"ranks: workers first, then servers", test_roles},
    {"allreduce: world sum, ring volume", test_allreduce_world},
    {"allreduce: pairs made concurrently", test_allreduce_pairs},
    {"allreduce_start: 16 in flight, the 17th refused", test_allreduce_nonblocking},
    {"allgather: every member's bytes", test_allgather},
    {"broadcast: from a non-zero root", test_broadcast},
    {"send/recv: in order, non-blocking matched apart", test_send_recv_order},
    {"send_start/recv_start: fan-out", test_fan_out},
    {"ps async: push buffers, pull buffers", test_ps_async},
    {"ps sync: every pull gets the round's sum", test_ps_sync},
    {"clock_wait: blocks until the slow worker advances", test_clock_wait},
    {"errors: invalid arguments are usage errors", test_errors},
    {"side channel: barrier, gather, allreduce", test_side_channel},
    CU_TEST_INFO_NULL};

static CU_SuiteInfo suites[] = {{"exchange_mpi", NULL, NULL, NULL, NULL, tests},
                                CU_SUITE_INFO_NULL};

int main(void) {
    under_mpirun = mpi_api_compiled() && mpi_api_under_launcher();
    world_size = 1;
    if (under_mpirun) {
        const mpi_api *mpi;
        if (mpi_api_init(&mpi) != SS_OK) {
            fprintf(stderr, "MPI: %s\n", ss_error_message());
            return 1;
        }
        mpi->comm_rank(mpi->comm_world, &world_rank);
        mpi->comm_size(mpi->comm_world, &world_size);
        if (world_size < N_WORKERS + 1 || world_size > N_WORKERS + 2) {
            fprintf(stderr, "run with mpirun -np 5 or -np 6 (4 workers + 1 or 2 servers)\n");
            mpi_api_finalize();
            return 1;
        }
    }
    int rc = ss_test_main(suites);
    if (under_mpirun) mpi_api_finalize();
    return rc;
}
