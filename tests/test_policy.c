/* CUnit suite of the policies with real gradients (emulation): equivalences between policies,
 * the staleness bound of SSP as the simulated clock makes it, BSP's simulated time against the
 * closed form, and determinism. Each run is a whole SimGrid simulation in its own process
 * (isolate_call), on a small synthetic data set. */
#include "common/status.h"
#include "emu/emulation.h"
#include "sim/net/cluster.h"
#include "common/isolate.h"
#include "sim/exchange/exchange_simgrid.h"
#include "sim/platform/platform_gen.h"
#include "sim/policy/policy_inject.h"
#include "sim/policy/policy.h"
#include "sim/simulate.h"
#include "ss_test.h"

#include <simgrid/host.h>
#include <string.h>
#include <unistd.h>

#define TP_MAX_WORKERS 8

typedef struct policy_case {
    policy_config pc; /* kind, workers, steps, batch, policy options */
    double momentum;
    double lr;
    const char *model; /* "mlp:64" ... */
    int cm02;          /* CM02 network model (closed forms) */
    double bandwidth_Bps;
    double latency_s;
    double slowdown[TP_MAX_WORKERS];
    int use_slowdown;
    partition_kind partition;
    double efficiency; /* host speed as a fraction of the V100's peak (1 = peak) */
} policy_case;

typedef struct policy_outcome {
    policy_result res;
    double host_speed_flops;
    double route_latency_s;
    double flops_per_step;
    double param_bytes;
    size_t params;
    double samples;      /* computed by all workers */
    double sample_bytes; /* one sample on the wire */
    float w[];           /* (N, P) final replicas */
} policy_outcome;

static void case_default(policy_case *c, policy_kind kind, int workers, long steps) {
    memset(c, 0, sizeof *c);
    policy_config_default(&c->pc);
    c->pc.coll.algo = SIM_ALLREDUCE_RING; /* written for the ring, the default before auto */
    c->pc.kind = kind;
    c->pc.workers = workers;
    c->pc.steps = steps;
    c->pc.batch = 16;
    c->pc.seed = 7;
    c->pc.eval_every = steps;
    c->momentum = 0.0;
    c->lr = 0.1;
    c->model = "mlp:64";
    c->bandwidth_Bps = 10e9 / 8;
    c->latency_s = 10e-6;
    c->partition = PARTITION_SELDP;
    c->efficiency = 1.0;
}

static void synthetic(dataset *train, dataset *test) {
    synthetic_spec s;
    synthetic_spec_default(&s);
    s.n_train = 1024;
    s.n_test = 256;
    s.classes = 4;
    s.c = 1;
    s.h = 4;
    s.w = 4;
    int rc = dataset_synthetic(&s, 3, train, test);
    SS_ASSERT(rc == SS_OK);
}

/* The child: platform, cluster, emulation, policy; returns a policy_outcome. */
static int run_case(void *arg, isolate_blob *out) {
    const policy_case *c = arg;
    policy_config pc = c->pc;
    if (c->use_slowdown) pc.slowdown = c->slowdown;
    int async = pc.kind == POLICY_SSP || pc.kind == POLICY_ASP;
    int n_ps = async || pc.use_ps ? pc.ps_servers : 0;

    char platform[64];
    snprintf(platform, sizeof platform, "/tmp/ss_test_policy_%d.xml", (int)getpid());
    platform_gen_spec ps = platform_gen_default();
    ps.n_hosts = pc.workers;
    ps.n_ps = n_ps;
    ps.bandwidth_Bps = c->bandwidth_Bps;
    ps.latency_s = c->latency_s;
    ps.efficiency = c->efficiency;
    FILE *fp = fopen(platform, "w");
    SS_ASSERT(fp);
    int rc = platform_generate(&ps, fp);
    fclose(fp);
    if (rc != SS_OK) return rc;

    dataset train, test;
    synthetic(&train, &test);
    device *dev;
    char notice[256];
    if ((rc = device_open("cpu", &dev, notice, sizeof notice)) != SS_OK) return rc;
    model_spec spec;
    if ((rc = model_spec_parse(&spec, c->model, 1, 4, 4, 4)) != SS_OK) return rc;
    sim_cluster_opts co = {.platform_path = platform,
                           .n_workers = pc.workers,
                           .n_ps = n_ps,
                           .model = c->cm02 ? SIM_NETWORK_CM02 : SIM_NETWORK_LV08};
    sim_cluster *cluster;
    if ((rc = sim_cluster_open(&co, &cluster)) != SS_OK) return rc;
    lr_schedule sched;
    lr_schedule_parse(&sched, "constant");
    sched.base_lr = c->lr;
    emulation_config ec = {.dev = dev,
                           .train = &train,
                           .test = &test,
                           .spec = &spec,
                           .seed = pc.seed,
                           .workers = pc.workers,
                           .batch = policy_local_batch(&pc),
                           .max_batch = pc.batch * pc.workers,
                           .partition = c->partition,
                           .partition_param = 1,
                           .schedule = sched,
                           .momentum = c->momentum,
                           .eval_every = pc.eval_every,
                           .last_step = pc.steps,
                           .layer_norms = 1,
                           .use_ps = async,
                           .ps_servers = pc.ps_servers,
                           .ps_lr_scale = 1.0 / pc.workers,
                           .evaluate_ps = async};
    emulation *em;
    if ((rc = emulation_create(&ec, &em)) != SS_OK) return rc;
    policy_result res;
    rc = sim_policy_run(&pc, cluster, emulation_source(em), NULL, NULL, &res);
    if (rc != SS_OK) return rc;

    model *m0 = emulation_replica(em, 0);
    size_t p = model_param_count(m0);
    size_t bytes = sizeof(policy_outcome) + sizeof(float) * p * (size_t)pc.workers;
    policy_outcome *o = ss_calloc(1, bytes);
    o->res = res;
    o->host_speed_flops = sg_host_get_speed(sim_cluster_worker_host(cluster, 0));
    o->route_latency_s = pc.workers > 1
                             ? sg_host_get_route_latency(sim_cluster_worker_host(cluster, 0),
                                                         sim_cluster_worker_host(cluster, 1))
                             : 0;
    o->flops_per_step =
        (model_forward_flops_per_sample(m0) + model_backward_flops_per_sample(m0)) * pc.batch;
    o->param_bytes = model_param_bytes(m0);
    o->params = p;
    o->samples = emulation_samples(em);
    o->sample_bytes = emulation_source(em)->sample_bytes;
    for (int w = 0; w < pc.workers; w++)
        device_download(dev, o->w + (size_t)w * p, model_params(emulation_replica(em, w)), p);
    isolate_blob_append(out, o, bytes);
    free(o);
    unlink(platform);
    return SS_OK;
}

/* Runs a case in its own process; the caller frees the outcome. */
static policy_outcome *run(const policy_case *c) {
    isolate_blob blob = {0};
    int rc = isolate_call(run_case, (void *)c, &blob);
    if (rc != SS_OK) {
        fprintf(stderr, "\n  run failed: %s\n", ss_error_message());
        CU_FAIL_FATAL("simulation failed");
    }
    return (policy_outcome *)blob.data;
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > m) m = d;
    }
    return m;
}

/* SelSync with delta = 0 and plain SGD synchronizes every step; parameter averaging after local
 * steps then equals gradient averaging: mean(w - lr g_i) = w - lr mean(g_i), up to rounding. */
static void test_selsync_delta0_equals_bsp(void) {
    policy_case bsp, sel;
    case_default(&bsp, POLICY_BSP, 4, 30);
    case_default(&sel, POLICY_SELSYNC, 4, 30);
    sel.pc.delta = 0;
    policy_outcome *a = run(&bsp), *b = run(&sel);
    size_t n = a->params * 4;
    double d = max_abs_diff(a->w, b->w, n);
    fprintf(stderr, "\n  max |w_bsp - w_selsync| = %.3g over %zu parameters\n", d, n);
    CU_ASSERT(d <= 1e-6);
    CU_ASSERT_EQUAL(b->res.sync_steps, 30);
    SS_CHECK_CLOSE(b->res.lssr, 0.0, 0, 0);
    /* the replicas agree after every synchronized step */
    CU_ASSERT(max_abs_diff(b->w, b->w + 3 * b->params, b->params) == 0.0);
    free(a);
    free(b);
}

/* FedAvg with H = 1 averages parameters after every local step: BSP again. */
static void test_fedavg_h1_equals_bsp(void) {
    policy_case bsp, fed;
    case_default(&bsp, POLICY_BSP, 4, 30);
    case_default(&fed, POLICY_FEDAVG, 4, 30);
    bsp.partition = fed.partition = PARTITION_DEFDP;
    fed.pc.local_steps = 1;
    policy_outcome *a = run(&bsp), *b = run(&fed);
    double d = max_abs_diff(a->w, b->w, a->params * 4);
    fprintf(stderr, "\n  max |w_bsp - w_fedavg(H=1)| = %.3g\n", d);
    CU_ASSERT(d <= 1e-6);
    CU_ASSERT_EQUAL(b->res.sync_steps, 30);
    free(a);
    free(b);
}

/* A delta no Delta reaches, with no warm-up window: SelSync never synchronizes. The only bytes
 * are the flags' all-gathers, and each replica is exactly the independent local training of its
 * worker on its SelDP data. */
static void test_selsync_huge_delta_is_local_sgd(void) {
    policy_case c;
    const int n = 4, steps = 25;
    case_default(&c, POLICY_SELSYNC, n, steps);
    c.pc.delta = 1e12;
    c.pc.ewma_window = 0;
    policy_outcome *o = run(&c);
    CU_ASSERT_EQUAL(o->res.sync_steps, 0);
    SS_CHECK_CLOSE(o->res.lssr, 1.0, 0, 0);
    /* Bruck all-gather of 1 byte per worker: N - 1 bytes sent per worker and step */
    SS_CHECK_CLOSE(o->res.bytes_sent, (double)steps * n * (n - 1) * 1.0, 0, 0);

    /* the same training without simulation, worker by worker */
    dataset train, test;
    synthetic(&train, &test);
    device *dev;
    char notice[256];
    device_open("cpu", &dev, notice, sizeof notice);
    model_spec spec;
    model_spec_parse(&spec, c.model, 1, 4, 4, 4);
    partition *part;
    partition_create(&train, n, PARTITION_SELDP, 0, c.pc.seed, &part);
    float *w = ss_malloc(sizeof(float) * o->params);
    float *x = ss_malloc(sizeof(float) * 16 * (size_t)c.pc.batch);
    uint8_t *y = ss_malloc((size_t)c.pc.batch);
    size_t idx[64];
    for (int k = 0; k < n; k++) {
        model *m;
        model_create(dev, &spec, c.pc.seed, c.pc.batch, &m);
        sgd_state *opt = sgd_create(dev, o->params);
        batch_iter *it = batch_iter_create(part, k, c.pc.seed);
        for (int s = 0; s < steps; s++) {
            batch_iter_next(it, idx, c.pc.batch);
            dataset_gather(&train, idx, c.pc.batch, x, y);
            model_forward_backward(m, x, y, c.pc.batch);
            sgd_step(opt, model_params(m), model_grads(m), (float)c.lr, 0, 0);
        }
        device_download(dev, w, model_params(m), o->params);
        CU_ASSERT(memcmp(w, o->w + (size_t)k * o->params, sizeof(float) * o->params) == 0);
        batch_iter_destroy(it);
        sgd_destroy(opt);
        model_destroy(m);
    }
    free(w);
    free(x);
    free(y);
    partition_destroy(part);
    device_close(dev);
    dataset_free(&train);
    dataset_free(&test);
    free(o);
}

/* Data injection (alpha, beta): round(alpha N) workers a step each send round(beta b') samples to
 * every other worker, b' = b / (1 + alpha beta N). With no synchronization, the bytes are the
 * flags plus exactly those samples, and every injected sample is computed by its receiver. */
static void test_selsync_injection(void) {
    policy_case c;
    const int n = 4, steps = 20;
    case_default(&c, POLICY_SELSYNC, n, steps);
    c.pc.delta = 1e12;
    c.pc.ewma_window = 0;
    c.pc.inject_alpha = 0.5;
    c.pc.inject_beta = 0.5;
    c.partition = PARTITION_NONIID;
    int local = policy_local_batch(&c.pc); /* 16 / (1 + 0.5 * 0.5 * 4) = 8 */
    CU_ASSERT_EQUAL(local, 8);
    policy_outcome *o = run(&c);
    const int senders = 2, share = 4;
    double flags = (double)steps * n * (n - 1);
    double injected = (double)steps * senders * (n - 1) * share * o->sample_bytes;
    SS_CHECK_CLOSE(o->res.bytes_sent, flags + injected, 0, 1e-12);
    SS_CHECK_CLOSE(o->samples, (double)steps * (n * local + senders * (n - 1) * share), 0, 0);
    CU_ASSERT_EQUAL(o->res.sync_steps, 0);
    free(o);
}

/* ---- the injection's messages on their own: all of a step's messages in flight together ---- */

#define INJ_MAX 16

typedef struct inject_case {
    int n, k;      /* workers; the first k of a fixed order send */
    double bytes;  /* per message */
    double bw_bps; /* star links, full duplex */
    double lat_s;  /* per link */
} inject_case;

typedef struct inject_actor {
    exchange *ex;
    exchange_group *world;
    int rank, n;
    const uint8_t *chosen;
    double bytes;
    inject_times t;
    int rc;
} inject_actor;

typedef struct inject_outcome {
    double route_latency_s;
    double elapsed_s[INJ_MAX];
    double bytes_sent[INJ_MAX];
    double send_s[INJ_MAX];
} inject_outcome;

static void inject_actor_main(void *data) {
    inject_actor *a = data;
    a->rc = policy_inject_exchange(a->ex, a->world, a->rank, a->n, a->chosen, a->bytes, 0, &a->t);
}

static int run_inject(void *arg, isolate_blob *out) {
    const inject_case *c = arg;
    char platform[64];
    snprintf(platform, sizeof platform, "/tmp/ss_test_inject_%d.xml", (int)getpid());
    platform_gen_spec ps = platform_gen_default();
    ps.n_hosts = c->n;
    ps.bandwidth_Bps = c->bw_bps / 8;
    ps.latency_s = c->lat_s;
    FILE *fp = fopen(platform, "w");
    SS_ASSERT(fp);
    int rc = platform_generate(&ps, fp);
    fclose(fp);
    if (rc != SS_OK) return rc;
    sim_cluster_opts co = {.platform_path = platform, .n_workers = c->n, .model = SIM_NETWORK_CM02};
    sim_cluster *cluster;
    if ((rc = sim_cluster_open(&co, &cluster)) != SS_OK) return rc;
    unlink(platform);
    exchange_simgrid_opts xo = {.coll = {SIM_ALLREDUCE_RING, 0}};
    exchange *ex;
    if ((rc = exchange_simgrid_open(cluster, &xo, &ex)) != SS_OK) return rc;
    /* senders spread evenly over the ranks */
    uint8_t chosen[INJ_MAX] = {0};
    for (int i = 0; i < c->k; i++)
        chosen[i * c->n / c->k] = 1;
    inject_actor actors[INJ_MAX];
    exchange_group *world = ex->ops->group(ex->self, NULL, c->n);
    for (int w = 0; w < c->n; w++) {
        actors[w] = (inject_actor){
            .ex = ex, .world = world, .rank = w, .n = c->n, .chosen = chosen, .bytes = c->bytes};
        sim_actor_spawn("inject", w, sim_cluster_worker_host(cluster, w), inject_actor_main,
                        &actors[w]);
    }
    double end_s;
    if ((rc = sim_cluster_simulate(cluster, &end_s)) != SS_OK) return rc;
    inject_outcome o = {0};
    o.route_latency_s = sg_host_get_route_latency(sim_cluster_worker_host(cluster, 0),
                                                  sim_cluster_worker_host(cluster, 1));
    for (int w = 0; w < c->n; w++) {
        if (actors[w].rc != SS_OK) return actors[w].rc;
        o.elapsed_s[w] = actors[w].t.send_s + actors[w].t.recv_wait_s;
        o.send_s[w] = actors[w].t.send_s;
        o.bytes_sent[w] = actors[w].t.bytes_sent;
    }
    exchange_simgrid_close(ex);
    sim_cluster_close(cluster);
    isolate_blob_append(out, &o, sizeof o);
    return SS_OK;
}

/* Every worker starts the step together; each sender's uplink carries its N - 1 messages (the
 * bottleneck: a downlink carries at most k <= N - 1), so under CM02's max-min sharing every
 * message gets B / (N - 1) and the whole exchange ends at L + (N - 1) m / B for every worker,
 * where one message after another would take k (N - 1) (L + m / B). */
static void test_inject_concurrent_closed_form(void) {
    static const inject_case cases[] = {{4, 2, 1e6, 10e9, 10e-6},
                                        {10, 5, 3e5, 5e9, 50e-6},
                                        {5, 5, 2e6, 25e9, 1e-6},
                                        {8, 1, 1e5, 1e9, 1e-3}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const inject_case *c = &cases[i];
        isolate_blob blob = {0};
        int rc = isolate_call(run_inject, (void *)c, &blob);
        CU_ASSERT_FATAL(rc == SS_OK && blob.bytes == sizeof(inject_outcome));
        const inject_outcome *o = (const inject_outcome *)blob.data;
        double b_Bps = c->bw_bps / 8.0;
        double want = o->route_latency_s + (c->n - 1) * c->bytes / b_Bps;
        SS_CHECK_CLOSE(o->route_latency_s, 2.0 * c->lat_s, 0, 1e-12);
        int senders = 0;
        for (int w = 0; w < c->n; w++) {
            SS_CHECK_CLOSE(o->elapsed_s[w], want, 0, 1e-9);
            int sends = o->bytes_sent[w] > 0;
            senders += sends;
            SS_CHECK_CLOSE(o->bytes_sent[w], sends ? (c->n - 1) * c->bytes : 0.0, 0, 0);
            if (sends) SS_CHECK_CLOSE(o->send_s[w], want, 0, 1e-9);
        }
        CU_ASSERT_EQUAL(senders, c->k);
        fprintf(stderr, "\n  N=%d k=%d: %.9g s, closed form %.9g s (one after another: %.9g s)",
                c->n, c->k, o->elapsed_s[0], want,
                c->k * (c->n - 1) * (o->route_latency_s + c->bytes / b_Bps));
        isolate_blob_free(&blob);
    }
    fprintf(stderr, "\n");
}

/* DS-Sync with G = N averages the parameters of all workers after every local step: synchronous
 * parameter averaging, bit-identical to SelSync with delta = 0 in PA mode. */
static void test_dssync_full_group_equals_selsync_delta0(void) {
    policy_case ds, sel;
    case_default(&ds, POLICY_DSSYNC, 4, 30);
    case_default(&sel, POLICY_SELSYNC, 4, 30);
    ds.pc.group_size = 4;
    sel.pc.delta = 0;
    ds.momentum = sel.momentum = 0.9;
    policy_outcome *a = run(&ds), *b = run(&sel);
    CU_ASSERT(memcmp(a->w, b->w, sizeof(float) * a->params * 4) == 0);
    /* groups of 2: the replicas differ, but each step moves 2 (N/2) messages of M/2 per group */
    policy_case pairs;
    case_default(&pairs, POLICY_DSSYNC, 4, 30);
    policy_outcome *c = run(&pairs);
    SS_CHECK_CLOSE(c->res.bytes_sent, 30.0 * 4 * c->param_bytes, 0, 1e-12);
    /* after the last step, worker 0 equals its partner and differs from the other pair */
    int equal = 0;
    for (int k = 1; k < 4; k++)
        equal += memcmp(c->w, c->w + (size_t)k * c->params, sizeof(float) * c->params) == 0;
    CU_ASSERT_EQUAL(equal, 1);
    free(a);
    free(b);
    free(c);
}

/* DLCP with a tolerance too small to drop a chunk moves everything through the chunked path:
 * the same parameters and time as without it. */
static void test_dlcp_eps0_identical(void) {
    policy_case plain, tiny;
    case_default(&plain, POLICY_BSP, 4, 20);
    case_default(&tiny, POLICY_BSP, 4, 20);
    tiny.pc.loss_tolerance = 1e-6;
    tiny.pc.chunk_bytes = 512;
    policy_outcome *a = run(&plain), *b = run(&tiny);
    CU_ASSERT(memcmp(a->w, b->w, sizeof(float) * a->params * 4) == 0);
    CU_ASSERT(a->res.sim_time_s == b->res.sim_time_s);
    CU_ASSERT(b->res.dlcp_bytes_dropped == 0.0);
    free(a);
    free(b);
}

/* eps = 0.25 on 11 chunks of 512 bytes (5392 bytes: the last one 272): 9 chunks must arrive, the
 * last two are dropped in layer priority. Dropped gradient entries count as zero, so with plain
 * SGD those parameters never move from their initial values, while the others do. */
static void test_dlcp_drop_accounting_and_priority(void) {
    policy_case c;
    const int n = 4, steps = 10;
    case_default(&c, POLICY_BSP, n, steps);
    c.pc.loss_tolerance = 0.25;
    c.pc.chunk_bytes = 512;
    policy_outcome *o = run(&c);
    CU_ASSERT_EQUAL((int)o->param_bytes, 5392);
    SS_CHECK_CLOSE(o->res.dlcp_bytes_total, (double)steps * n * 5392, 0, 0);
    SS_CHECK_CLOSE(o->res.dlcp_bytes_dropped, (double)steps * n * (512 + 272), 0, 0);
    /* the initial parameters, from the same seed */
    device *dev;
    char notice[256];
    device_open("cpu", &dev, notice, sizeof notice);
    model_spec spec;
    model_spec_parse(&spec, c.model, 1, 4, 4, 4);
    model *m;
    model_create(dev, &spec, c.pc.seed, 16, &m);
    float *w0 = ss_malloc(sizeof(float) * o->params);
    device_download(dev, w0, model_params(m), o->params);
    size_t kept = 9 * 128; /* floats in the chunks that arrived */
    CU_ASSERT(memcmp(w0 + kept, o->w + kept, sizeof(float) * (o->params - kept)) == 0);
    int moved = 0;
    for (size_t i = 0; i < kept; i++)
        moved += w0[i] != o->w[i];
    CU_ASSERT(moved > (int)kept / 2);
    free(w0);
    model_destroy(m);
    device_close(dev);
    free(o);
}

/* A straggler: one worker computes 3x slower; BSP waits for it every step, so each step takes
 * 3 x compute + the ring all-reduce (CM02), and the others' waiting is the difference. */
static void test_straggler_closed_form(void) {
    policy_case c;
    const int n = 4, steps = 8;
    case_default(&c, POLICY_BSP, n, steps);
    c.cm02 = 1;
    c.efficiency = 1e-4;
    c.use_slowdown = 1;
    for (int i = 0; i < n; i++)
        c.slowdown[i] = 1.0;
    c.slowdown[2] = 3.0;
    policy_outcome *o = run(&c);
    double b_Bps = c.bandwidth_Bps, m = o->param_bytes;
    double compute = o->flops_per_step / o->host_speed_flops;
    double ring = 2.0 * (n - 1) * o->route_latency_s + 2.0 * (n - 1) / n * m / b_Bps;
    SS_CHECK_CLOSE(o->res.sim_time_s, steps * (3 * compute + ring), 0, 1e-6);
    SS_CHECK_CLOSE(o->res.wait_s, steps * 2 * compute * 3 / 4, 0, 1e-6);
    /* random stragglers with p = 1: every step of every worker is f times slower */
    case_default(&c, POLICY_BSP, n, steps);
    c.cm02 = 1;
    c.efficiency = 1e-4;
    c.pc.straggler_prob = 1.0;
    c.pc.straggler_factor = 2.0;
    policy_outcome *p = run(&c);
    SS_CHECK_CLOSE(p->res.sim_time_s, steps * (2 * compute + ring), 0, 1e-6);
    free(o);
    free(p);
}

/* SSP with s = 0 on identical hosts runs in lockstep: no worker is ever ahead of another. */
static void test_ssp_s0_lockstep(void) {
    policy_case c;
    case_default(&c, POLICY_SSP, 4, 20);
    c.pc.staleness = 0;
    policy_outcome *o = run(&c);
    CU_ASSERT_EQUAL(o->res.max_clock_gap, 0);
    CU_ASSERT_EQUAL(o->res.clock_gap_hist[0], 4 * 20);
    CU_ASSERT_EQUAL(o->res.sync_steps, 20);
    free(o);
}

/* SSP with s = 2 and one worker 3x slower: the fast workers run ahead until the bound stops
 * them; the clock gap reaches s and never exceeds it, and the fast workers wait. */
static void test_ssp_straggler_bound(void) {
    policy_case c;
    case_default(&c, POLICY_SSP, 4, 30);
    c.pc.staleness = 2;
    c.efficiency = 1e-5; /* 157 MFLOP/s hosts: compute dominates the exchanges */
    c.use_slowdown = 1;
    for (int i = 0; i < 4; i++)
        c.slowdown[i] = 1.0;
    c.slowdown[3] = 3.0;
    policy_outcome *o = run(&c);
    fprintf(stderr, "\n  max clock gap %ld, max update staleness %ld, wait %.3g s per worker\n",
            o->res.max_clock_gap, o->res.max_update_staleness, o->res.wait_s);
    CU_ASSERT_EQUAL(o->res.max_clock_gap, 2);
    CU_ASSERT(o->res.clock_gap_hist[2] > 0);
    for (int b = 3; b < POLICY_STALENESS_BINS; b++)
        CU_ASSERT_EQUAL(o->res.clock_gap_hist[b], 0);
    CU_ASSERT(o->res.wait_s > 0);
    /* ASP: no bound; the gap grows past 2 */
    c.pc.kind = POLICY_ASP;
    policy_outcome *a = run(&c);
    fprintf(stderr, "  ASP: max clock gap %ld\n", a->res.max_clock_gap);
    CU_ASSERT(a->res.max_clock_gap > 2);
    SS_CHECK_CLOSE(a->res.wait_s, 0.0, 1e-12, 0);
    free(o);
    free(a);
}

/* BSP under CM02: every step is the compute (FLOPs / host speed) plus a ring all-reduce of the
 * parameters, 2(N-1) alpha + 2(N-1)/N M/B, one after the other. */
static void test_bsp_time_closed_form(void) {
    policy_case c;
    const int n = 4, steps = 12;
    case_default(&c, POLICY_BSP, n, steps);
    c.cm02 = 1;
    c.bandwidth_Bps = 5e9 / 8;
    policy_outcome *o = run(&c);
    double b_Bps = c.bandwidth_Bps;
    double m = o->param_bytes;
    double step_s = o->flops_per_step / o->host_speed_flops + 2.0 * (n - 1) * o->route_latency_s +
                    2.0 * (n - 1) / n * m / b_Bps;
    fprintf(stderr, "\n  BSP simulated %.9g s, closed form %.9g s (M = %.0f bytes)\n",
            o->res.sim_time_s, steps * step_s, m);
    SS_CHECK_CLOSE(o->res.sim_time_s, steps * step_s, 0, 1e-6);
    SS_CHECK_CLOSE(o->res.compute_s, steps * o->flops_per_step / o->host_speed_flops, 0, 1e-9);
    SS_CHECK_CLOSE(o->res.bytes_sent, steps * n * 2.0 * (n - 1) / n * m, 0, 1e-9);
    free(o);
}

/* The same seed and configuration give bit-identical parameters and times. */
static void test_determinism(void) {
    policy_case c;
    case_default(&c, POLICY_SELSYNC, 4, 40);
    c.pc.delta = 0.02;
    c.pc.ewma_window = 5;
    c.momentum = 0.9;
    policy_outcome *a = run(&c), *b = run(&c);
    CU_ASSERT(memcmp(a->w, b->w, sizeof(float) * a->params * 4) == 0);
    CU_ASSERT(a->res.sim_time_s == b->res.sim_time_s);
    CU_ASSERT_EQUAL(a->res.sync_steps, b->res.sync_steps);
    fprintf(stderr, "\n  SelSync delta=0.02: %ld of 40 steps synchronized\n", a->res.sync_steps);
    free(a);
    free(b);
}

/* A model with batch normalization and residual adds (resnet:8 on the 4x4 samples) under BSP:
 * the replicas' parameters agree after every step (their running statistics are their own), and
 * two runs are bit-identical. */
static void test_resnet_bsp(void) {
    policy_case c;
    case_default(&c, POLICY_BSP, 2, 6);
    c.model = "resnet:8";
    c.momentum = 0.9;
    c.lr = 0.05;
    policy_outcome *a = run(&c), *b = run(&c);
    CU_ASSERT(a->params > 70000);
    CU_ASSERT(max_abs_diff(a->w, a->w + a->params, a->params) == 0.0);
    CU_ASSERT(memcmp(a->w, b->w, sizeof(float) * a->params * 2) == 0);
    CU_ASSERT(a->res.sim_time_s == b->res.sim_time_s);
    free(a);
    free(b);
}

static CU_TestInfo equivalence_tests[] = {
    {"policy_run: SelSync delta=0 (PA, plain SGD) equals BSP", test_selsync_delta0_equals_bsp},
    {"policy_run: FedAvg H=1 equals BSP", test_fedavg_h1_equals_bsp},
    {"policy_run: SelSync huge delta equals independent local training",
     test_selsync_huge_delta_is_local_sgd},
    {"policy_run: SelSync data injection charges and computes the shared samples",
     test_selsync_injection},
    {"policy_inject: a step's injection messages run concurrently (CM02 closed form)",
     test_inject_concurrent_closed_form},
    {"policy_run: DS-Sync with G=N equals SelSync delta=0 (PA), bit for bit",
     test_dssync_full_group_equals_selsync_delta0},
    {"policy_run: DLCP with nothing dropped is bit-identical to no DLCP", test_dlcp_eps0_identical},
    {"policy_run: DLCP drops exactly the tail chunks in layer priority",
     test_dlcp_drop_accounting_and_priority},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo timing_tests[] = {
    {"policy_run: SSP s=0 runs in lockstep", test_ssp_s0_lockstep},
    {"policy_run: SSP s=2 with a 3x straggler respects the bound; ASP does not",
     test_ssp_straggler_bound},
    {"policy_run: BSP simulated time equals compute + ring closed form (CM02)",
     test_bsp_time_closed_form},
    {"policy_run: two identical runs are bit-identical", test_determinism},
    {"policy_run: BSP trains resnet:8 (batch norm, residual adds), bit-identically",
     test_resnet_bsp},
    {"policy_run: a 3x straggler lengthens BSP by its closed form", test_straggler_closed_form},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"policy equivalences", NULL, NULL, NULL, NULL, equivalence_tests},
    {"policy timing", NULL, NULL, NULL, NULL, timing_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}
