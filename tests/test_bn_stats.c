/* CUnit suite of batch normalization's running statistics under the policies (--bn-stats): with
 * average, every aggregation (PA or GA) leaves each member's running statistics equal to the
 * mean of the members' just before it, and a parameter server hands out the mean of the
 * statistics each worker last pushed; with local, an aggregation leaves them as they were. The
 * bytes of every exchange include the statistics exactly when they are averaged. Each run is a
 * SimGrid simulation of resnet:8 on 4 x 4 synthetic images in its own process (isolate_call);
 * the checks run inside it, on a step source that wraps the emulation's. A recorded trace of such
 * a run replays its time exactly (the statistics' bytes are in its header). */
#include "common/isolate.h"
#include "common/status.h"
#include "emu/emulation.h"
#include "sim/net/cluster.h"
#include "sim/platform/platform_gen.h"
#include "sim/policy/policy.h"
#include "sim/simulate.h"
#include "ss_test.h"

#include <string.h>
#include <unistd.h>

#define BN_WORKERS 4
#define BN_SLOTS   8

typedef struct bn_case {
    policy_config pc;
    int bn_average;
} bn_case;

/* What the child reports. */
typedef struct bn_outcome {
    long checked;         /* members' statistics compared after an aggregation or a pull */
    long off_mean;        /* ... that were not the mean of the members' before it (rel 1e-5) */
    long changed;         /* ... that an aggregation changed (local: must stay 0) */
    long distinct_before; /* aggregations whose members' statistics differed before it */
    double bytes_sent, param_bytes, state_bytes;
    size_t params, buffers;
    float final_buffers[]; /* (N, S) */
} bn_outcome;

/* One aggregation in flight: the members' statistics when its first call came. */
typedef struct bn_slot {
    long seq;
    int key;
    float *before; /* (N, S) every replica's */
    double *mean;  /* (S) over the members */
} bn_slot;

typedef struct bn_hook {
    step_source_ops ops;
    const step_source_ops *orig;
    emulation *em;
    int workers;
    size_t s;
    int average;
    bn_slot slots[BN_SLOTS];
    int next_slot;
    float *pushed; /* (N, S) statistics at each worker's last push (parameter server) */
    bn_outcome *o;
} bn_hook;

static bn_hook hook; /* one run per child process */

static const float *stats_of(int w) {
    return model_buffers(emulation_replica(hook.em, w));
}

static bn_slot *slot_for(long seq, const int *group, int n) {
    const int key = group ? group[0] : -1;
    for (int i = 0; i < BN_SLOTS; i++)
        if (hook.slots[i].seq == seq && hook.slots[i].key == key) return &hook.slots[i];
    bn_slot *sl = &hook.slots[hook.next_slot++ % BN_SLOTS];
    sl->seq = seq;
    sl->key = key;
    for (int w = 0; w < hook.workers; w++)
        memcpy(sl->before + (size_t)w * hook.s, stats_of(w), sizeof(float) * hook.s);
    int distinct = 0;
    for (size_t k = 0; k < hook.s; k++) {
        double sum = 0;
        for (int j = 0; j < n; j++) {
            const float v = sl->before[(size_t)(group ? group[j] : j) * hook.s + k];
            sum += v;
            distinct |= v != sl->before[(size_t)(group ? group[0] : 0) * hook.s + k];
        }
        sl->mean[k] = sum / n;
    }
    hook.o->distinct_before += distinct;
    return sl;
}

/* Counts worker w's statistics against `mean` (off by more than rel 1e-5) and `before`. */
static void compare(int w, const double *mean, const float *before) {
    const float *now = stats_of(w);
    int off = 0, changed = 0;
    for (size_t k = 0; k < hook.s; k++) {
        off |= fabs(now[k] - mean[k]) > 1e-6 + 1e-5 * fabs(mean[k]);
        changed |= before && now[k] != before[k];
    }
    hook.o->checked++;
    hook.o->off_mean += off;
    hook.o->changed += changed;
}

static void hooked_aggregate(void *self, int w, long seq, const int *group, int n, int callers,
                             aggregate_what what, const uint8_t *mask, int keep_local) {
    bn_slot *sl = slot_for(seq, group, n);
    hook.orig->aggregate(self, w, seq, group, n, callers, what, mask, keep_local);
    compare(w, sl->mean, sl->before + (size_t)w * hook.s);
}

static void hooked_ps_apply(void *self, int w, long step, int shard, int n_shards) {
    if (shard == 0) memcpy(hook.pushed + (size_t)w * hook.s, stats_of(w), sizeof(float) * hook.s);
    hook.orig->ps_apply(self, w, step, shard, n_shards);
}

static void hooked_ps_pull(void *self, int w, int shard, int n_shards) {
    float *before = ss_malloc(sizeof(float) * hook.s);
    memcpy(before, stats_of(w), sizeof(float) * hook.s);
    hook.orig->ps_pull(self, w, shard, n_shards);
    if (shard == 0) {
        double *mean = ss_calloc(hook.s, sizeof(double));
        for (int j = 0; j < hook.workers; j++)
            for (size_t k = 0; k < hook.s; k++)
                mean[k] += hook.pushed[(size_t)j * hook.s + k] / (double)hook.workers;
        compare(w, mean, before);
        free(mean);
    }
    free(before);
}

static void synthetic(dataset *train, dataset *test) {
    synthetic_spec s;
    synthetic_spec_default(&s);
    s.n_train = 1024;
    s.n_test = 128;
    s.classes = 4;
    s.c = 1;
    s.h = 4;
    s.w = 4;
    SS_ASSERT(dataset_synthetic(&s, 3, train, test) == SS_OK);
}

static int open_cluster(const policy_config *pc, int n_ps, char *platform, size_t size,
                        sim_cluster **cluster) {
    snprintf(platform, size, "/tmp/ss_test_bn_stats_%d.xml", (int)getpid());
    platform_gen_spec ps = platform_gen_default();
    ps.n_hosts = pc->workers;
    ps.n_ps = n_ps;
    ps.bandwidth_Bps = 10e9 / 8;
    ps.latency_s = 10e-6;
    FILE *fp = fopen(platform, "w");
    SS_ASSERT(fp);
    int rc = platform_generate(&ps, fp);
    fclose(fp);
    if (rc != SS_OK) return rc;
    sim_cluster_opts co = {.platform_path = platform,
                           .n_workers = pc->workers,
                           .n_ps = n_ps,
                           .model = SIM_NETWORK_CM02};
    return sim_cluster_open(&co, cluster);
}

static void hook_install(emulation *em, const bn_case *c, size_t s, bn_outcome *o) {
    step_source *src = emulation_source(em);
    memset(&hook, 0, sizeof hook);
    hook.orig = src->ops;
    hook.ops = *src->ops;
    hook.ops.aggregate = hooked_aggregate;
    hook.ops.ps_apply = hooked_ps_apply;
    hook.ops.ps_pull = hooked_ps_pull;
    hook.em = em;
    hook.workers = c->pc.workers;
    hook.s = s;
    hook.average = c->bn_average;
    hook.o = o;
    for (int i = 0; i < BN_SLOTS; i++) {
        hook.slots[i].seq = -1;
        hook.slots[i].before = ss_malloc(sizeof(float) * s * (size_t)c->pc.workers);
        hook.slots[i].mean = ss_malloc(sizeof(double) * s);
    }
    hook.pushed = ss_malloc(sizeof(float) * s * (size_t)c->pc.workers);
    for (int w = 0; w < c->pc.workers; w++)
        memcpy(hook.pushed + (size_t)w * s, stats_of(w), sizeof(float) * s);
    src->ops = &hook.ops;
}

/* The child: the run with its checks; returns a bn_outcome. */
static int run_case(void *arg, isolate_blob *out) {
    const bn_case *c = arg;
    const int async = c->pc.kind == POLICY_SSP || c->pc.kind == POLICY_ASP;
    char platform[64];
    sim_cluster *cluster;
    int rc = open_cluster(&c->pc, async ? 1 : 0, platform, sizeof platform, &cluster);
    if (rc != SS_OK) return rc;
    dataset train, test;
    synthetic(&train, &test);
    device *dev;
    char notice[256];
    if ((rc = device_open("cpu", &dev, notice, sizeof notice)) != SS_OK) return rc;
    model_spec spec;
    if ((rc = model_spec_parse(&spec, "resnet:8", 1, 4, 4, 4)) != SS_OK) return rc;
    lr_schedule sched;
    lr_schedule_parse(&sched, "constant");
    sched.base_lr = 0.05;
    emulation_config ec = {.dev = dev,
                           .train = &train,
                           .test = &test,
                           .spec = &spec,
                           .seed = c->pc.seed,
                           .workers = c->pc.workers,
                           .batch = c->pc.batch,
                           .max_batch = c->pc.batch,
                           .partition = PARTITION_DEFDP,
                           .schedule = sched,
                           .momentum = 0.9,
                           .bn_average = c->bn_average,
                           .eval_every = c->pc.steps,
                           .last_step = c->pc.steps,
                           .use_ps = async,
                           .ps_servers = 1,
                           .evaluate_ps = async};
    emulation *em;
    if ((rc = emulation_create(&ec, &em)) != SS_OK) return rc;
    const size_t s = model_buffer_count(emulation_replica(em, 0));
    const int n = c->pc.workers;
    size_t bytes = sizeof(bn_outcome) + sizeof(float) * s * (size_t)n;
    bn_outcome *o = ss_calloc(1, bytes);
    hook_install(em, c, s, o);
    policy_result res;
    policy_config pc = c->pc;
    if ((rc = sim_policy_run(&pc, cluster, emulation_source(em), NULL, NULL, &res)) != SS_OK)
        return rc;
    o->bytes_sent = res.bytes_sent;
    o->param_bytes = emulation_source(em)->param_bytes;
    o->state_bytes = emulation_source(em)->state_bytes;
    o->params = model_param_count(emulation_replica(em, 0));
    o->buffers = s;
    for (int w = 0; w < n; w++)
        memcpy(o->final_buffers + (size_t)w * s, stats_of(w), sizeof(float) * s);
    isolate_blob_append(out, o, bytes);
    unlink(platform);
    return SS_OK;
}

static bn_outcome *run(const bn_case *c) {
    isolate_blob blob = {0};
    if (isolate_call(run_case, (void *)c, &blob) != SS_OK) {
        fprintf(stderr, "\n  run failed: %s\n", ss_error_message());
        CU_FAIL_FATAL("simulation failed");
    }
    return (bn_outcome *)blob.data;
}

static void case_of(bn_case *c, policy_kind kind, long steps, int average) {
    memset(c, 0, sizeof *c);
    policy_config_default(&c->pc);
    c->pc.coll.algo = SIM_ALLREDUCE_RING;
    c->pc.kind = kind;
    c->pc.workers = BN_WORKERS;
    c->pc.steps = steps;
    c->pc.batch = 16;
    c->pc.seed = 11;
    c->pc.eval_every = steps;
    c->bn_average = average;
}

static int buffers_equal(const bn_outcome *o, int a, int b) {
    return !memcmp(o->final_buffers + (size_t)a * o->buffers,
                   o->final_buffers + (size_t)b * o->buffers, sizeof(float) * o->buffers);
}

/* Local SGD (FedAvg, every worker, H = 2): with average each sync leaves every replica's running
 * statistics at the mean of the replicas' before it, and the last step (a sync) leaves them all
 * equal; with local a sync leaves them as they were, and they stay different. */
static void test_local_sgd(void) {
    bn_case c;
    case_of(&c, POLICY_FEDAVG, 8, 1);
    c.pc.local_steps = 2;
    bn_outcome *avg = run(&c);
    c.bn_average = 0;
    bn_outcome *loc = run(&c);
    CU_ASSERT(avg->buffers > 0);
    CU_ASSERT_EQUAL(avg->checked, 4 * BN_WORKERS); /* 4 syncs of 4 workers */
    CU_ASSERT_EQUAL(avg->off_mean, 0);
    CU_ASSERT_EQUAL(avg->distinct_before, 4); /* the replicas saw different batches */
    for (int w = 1; w < BN_WORKERS; w++)
        CU_ASSERT(buffers_equal(avg, 0, w));
    CU_ASSERT_EQUAL(loc->checked, 4 * BN_WORKERS);
    CU_ASSERT_EQUAL(loc->changed, 0);
    CU_ASSERT_EQUAL(loc->off_mean, loc->checked); /* none at the mean: they are its own */
    CU_ASSERT(!buffers_equal(loc, 0, 1));
    /* a running statistic moves linearly (r = 0.9 r + 0.1 s, s from the batch alone), so the
     * mean over the replicas, which the consensus model is evaluated with, is the same either
     * way up to rounding: what differs is what each worker holds */
    double worst = 0;
    for (size_t k = 0; k < avg->buffers; k++) {
        double mean = 0;
        for (int w = 0; w < BN_WORKERS; w++)
            mean += loc->final_buffers[(size_t)w * loc->buffers + k] / BN_WORKERS;
        const double d = fabs(mean - avg->final_buffers[k]) / (1e-3 + fabs(mean));
        if (d > worst) worst = d;
    }
    CU_ASSERT(worst < 1e-4);
    free(avg);
    free(loc);
}

/* Gradient aggregation (BSP, and SelSync GA with delta 0): there is no parameter average, but the
 * statistics are averaged with every exchange all the same under average. */
static void test_gradient_aggregation(void) {
    bn_case c;
    case_of(&c, POLICY_BSP, 5, 1);
    bn_outcome *bsp = run(&c);
    CU_ASSERT_EQUAL(bsp->checked, 5 * BN_WORKERS);
    CU_ASSERT_EQUAL(bsp->off_mean, 0);
    CU_ASSERT(bsp->distinct_before == 5);
    case_of(&c, POLICY_SELSYNC, 5, 1);
    c.pc.delta = 0;
    c.pc.aggregation = AGGREGATE_GRADS;
    bn_outcome *ga = run(&c);
    CU_ASSERT_EQUAL(ga->checked, 5 * BN_WORKERS);
    CU_ASSERT_EQUAL(ga->off_mean, 0);
    for (int w = 1; w < BN_WORKERS; w++)
        CU_ASSERT(buffers_equal(ga, 0, w));
    c.bn_average = 0;
    bn_outcome *ga_local = run(&c);
    CU_ASSERT_EQUAL(ga_local->changed, 0);
    CU_ASSERT(!buffers_equal(ga_local, 0, 1));
    free(bsp);
    free(ga);
    free(ga_local);
}

/* SSP through a parameter server: each pull hands the worker the mean of the statistics every
 * worker last pushed (average); with local the pull leaves them. */
static void test_parameter_server(void) {
    bn_case c;
    case_of(&c, POLICY_SSP, 4, 1);
    c.pc.staleness = 1;
    bn_outcome *avg = run(&c);
    CU_ASSERT_EQUAL(avg->checked, 4 * BN_WORKERS);
    CU_ASSERT_EQUAL(avg->off_mean, 0);
    c.bn_average = 0;
    bn_outcome *loc = run(&c);
    CU_ASSERT_EQUAL(loc->checked, 4 * BN_WORKERS);
    CU_ASSERT_EQUAL(loc->changed, 0);
    free(avg);
    free(loc);
}

/* The bytes of the exchanges grow by exactly the statistics' share when they are averaged: the
 * ring all-reduce (BSP) and the all-reduce and broadcast of FedAvg move (P + S) instead of P
 * floats. */
static void test_bytes_include_statistics(void) {
    for (int k = 0; k < 2; k++) {
        bn_case c;
        case_of(&c, k ? POLICY_FEDAVG : POLICY_BSP, 4, 1);
        c.pc.local_steps = 2;
        bn_outcome *avg = run(&c);
        c.bn_average = 0;
        bn_outcome *loc = run(&c);
        SS_CHECK_CLOSE(avg->state_bytes, 4.0 * (double)avg->buffers, 0, 0);
        CU_ASSERT(loc->state_bytes == 0.0);
        SS_CHECK_CLOSE(avg->bytes_sent / loc->bytes_sent,
                       (double)(avg->params + avg->buffers) / (double)avg->params, 0, 1e-9);
        free(avg);
        free(loc);
    }
}

/* Runs the built syncsim with `args`; the exit code, the output in *out (caller frees). */
static int run_syncsim(const char *args, char **out) {
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "%s/syncsim %s 2>&1", SS_BINARY_DIR, args);
    return ss_test_shell(cmd, out);
}

static void test_trace_replays_exactly(void) {
    char dir[] = "/tmp/ss_test_bn_stats_XXXXXX", args[1024];
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
    snprintf(args, sizeof args,
             "train --dataset synthetic --model resnet:8 --policy bsp --workers 2 --batch 8 "
             "--epochs 0.004 --device cpu --progress no --out %s/train",
             dir);
    char *out = NULL;
    CU_ASSERT_EQUAL(run_syncsim(args, &out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "bn-stats average"));
    free(out);
    snprintf(args, sizeof args, "grep -c '^# meta state_bytes = ' %s/train/steps.trace", dir);
    CU_ASSERT_EQUAL(ss_test_shell(args, NULL), 0);
    snprintf(args, sizeof args, "replay --trace %s/train/steps.trace --out %s/replay", dir, dir);
    CU_ASSERT_EQUAL(run_syncsim(args, &out), 0);
    const int exact = strstr(out, "relative difference 0\n") != NULL;
    if (!exact) fprintf(stderr, "\n  replay:\n%s\n", out);
    CU_ASSERT(exact);
    free(out);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    CU_ASSERT_EQUAL(ss_test_shell(args, NULL), 0);
}

static CU_TestInfo tests[] = {
    {"bn-stats: local SGD averages the statistics at each sync (average) or keeps them (local)",
     test_local_sgd},
    {"bn-stats: gradient aggregation (BSP, SelSync GA) averages them too",
     test_gradient_aggregation},
    {"bn-stats: a parameter server hands out the mean of the last pushed", test_parameter_server},
    {"bn-stats: the bytes of an exchange include the statistics when averaged",
     test_bytes_include_statistics},
    {"bn-stats: a recorded trace of a run that averages them replays exactly",
     test_trace_replays_exactly},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"batch-norm statistics under the policies", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}
