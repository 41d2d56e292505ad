/* CUnit suite of the compute engine (common/engine.h) and of what it must not change: an
 * emulated run gives the same bytes on one thread and on several (every policy's way of
 * averaging and stepping the replicas, whose optimizer steps and copies of averages run deferred
 * on the engine; mlp and cnn, modelled and measured compute), --threads refuses what it cannot
 * take, the memory estimate counts the engine's threads, and bench emulation's table and CSV.
 * The runs are the built program as a child process (build/syncsim). */
#include "common/engine.h"
#include "common/isolate.h"
#include "common/status.h"
#include "emu/memory.h"
#include "kernels/device.h"
#include "kernels/model.h"
#include "ss_test.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static char tmp_dir[256];

static int run_syncsim(const char *args, char **output) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/syncsim %s 2>&1", SS_BINARY_DIR, args);
    return ss_test_shell(cmd, output);
}

static int suite_init(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/ss_test_engine_XXXXXX");
    return mkdtemp(tmp_dir) ? 0 : 1;
}

static int suite_clean(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    return system(cmd) == 0 ? 0 : 1;
}

/* ---- the pool ---- */

typedef struct sum_job {
    engine_task t;
    int index;
    long result;
    int runs;
    pthread_t by;
    int slot;
} sum_job;

/* A task with enough work that several run at once on a pool. */
static void sum_run(void *arg, int slot) {
    sum_job *j = arg;
    (void)slot;
    long s = 0;
    for (long i = 0; i <= 20000L * (j->index + 1); i++)
        s += i % 7;
    j->result = s;
    j->runs++;
    j->by = pthread_self();
    j->slot = slot;
}

static long sum_expected(int index) {
    long s = 0;
    for (long i = 0; i <= 20000L * (index + 1); i++)
        s += i % 7;
    return s;
}

static void test_pool_runs_each_task_once(void) {
    enum { TASKS = 64 };
    const int counts[] = {1, 2, 4};
    for (int c = 0; c < 3; c++) {
        engine *en = NULL;
        CU_ASSERT_EQUAL_FATAL(engine_create(counts[c], &en), SS_OK);
        CU_ASSERT_EQUAL(engine_threads(en), counts[c]);
        static sum_job jobs[TASKS];
        for (int round = 0; round < 2; round++) { /* a done task is submitted again */
            for (int i = 0; i < TASKS; i++) {
                if (round == 0)
                    jobs[i] = (sum_job){.t = {.run = sum_run, .arg = &jobs[i]}, .index = i};
                engine_submit(en, &jobs[i].t);
            }
            for (int i = TASKS - 1; i >= 0; i--) /* waited for in any order */
                engine_wait(en, &jobs[i].t);
            for (int i = 0; i < TASKS; i++) {
                CU_ASSERT_EQUAL(jobs[i].result, sum_expected(i));
                CU_ASSERT_EQUAL(jobs[i].runs, round + 1);
                /* one thread: the caller runs them, slot 0; a pool of counts - 1 threads takes
                 * slots 0 .. counts - 2, and the caller, waiting, the last */
                const int by_caller = pthread_equal(jobs[i].by, pthread_self()) != 0;
                CU_ASSERT(jobs[i].slot >= 0 && jobs[i].slot < counts[c]);
                CU_ASSERT_EQUAL(by_caller, jobs[i].slot == counts[c] - 1);
            }
        }
        engine_destroy(en);
    }
}

/* Homes: tasks homed on the pool's threads, submitted together while those threads wait for
 * work, each run on its home, round after round (and with SYNCSIM_ENGINE_HOMES=0 still once
 * each); the caller's homed task anywhere. */
static void test_homes(void) {
    enum { THREADS = 4, ROUNDS = 40 };
    for (int homes = 1; homes >= 0; homes--) {
        setenv("SYNCSIM_ENGINE_HOMES", homes ? "1" : "0", 1);
        engine *en = NULL;
        CU_ASSERT_EQUAL_FATAL(engine_create(THREADS, &en), SS_OK);
        unsetenv("SYNCSIM_ENGINE_HOMES");
        sum_job jobs[THREADS];
        int away = 0;
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < THREADS; i++) { /* homes 1 .. THREADS: slots 0 .. THREADS - 1 */
                if (round == 0)
                    jobs[i] = (sum_job){.t = {.run = sum_run, .arg = &jobs[i], .home = 1 + i},
                                        .index = i};
                engine_submit(en, &jobs[i].t);
            }
            for (int i = 0; i < THREADS; i++)
                engine_wait(en, &jobs[i].t);
            for (int i = 0; i < THREADS; i++) {
                CU_ASSERT_EQUAL(jobs[i].result, sum_expected(i));
                CU_ASSERT_EQUAL(jobs[i].runs, round + 1);
            }
            for (int i = 0; i < THREADS - 1; i++) /* the pool's: the caller's may be taken */
                away += jobs[i].slot != i;
        }
        if (homes) CU_ASSERT_EQUAL(away, 0);
        engine_destroy(en);
    }
}

typedef struct gate_job {
    engine_task t;
    atomic_int *open; /* the task returns once it is 1 */
    atomic_int *started;
    int slot;
} gate_job;

static void gate_run(void *arg, int slot) {
    gate_job *j = arg;
    j->slot = slot;
    atomic_store(j->started, 1);
    while (!atomic_load(j->open))
        sched_yield();
}

static void mark_run(void *arg, int slot) {
    sum_job *j = arg;
    j->slot = slot;
    j->runs++;
}

/* A home's thread busy: the tasks homed there run on the other threads meanwhile. */
static void test_homes_busy(void) {
    setenv("SYNCSIM_ENGINE_HOMES", "1", 1);
    engine *en = NULL;
    CU_ASSERT_EQUAL_FATAL(engine_create(3, &en), SS_OK);
    unsetenv("SYNCSIM_ENGINE_HOMES");
    atomic_int open = 0, started = 0;
    gate_job gate = {.t = {.run = gate_run, .home = 1}, .open = &open, .started = &started};
    gate.t.arg = &gate;
    engine_submit(en, &gate.t);
    while (!atomic_load(&started)) /* slot 0 takes it */
        sched_yield();
    sum_job jobs[6];
    for (int i = 0; i < 6; i++) {
        jobs[i] = (sum_job){.t = {.run = mark_run, .arg = &jobs[i], .home = 1}, .slot = -1};
        engine_submit(en, &jobs[i].t);
    }
    for (int i = 0; i < 6; i++) { /* slot 0 is held: each runs elsewhere */
        engine_wait(en, &jobs[i].t);
        CU_ASSERT_EQUAL(jobs[i].runs, 1);
        CU_ASSERT(jobs[i].slot == 1 || jobs[i].slot == 2);
    }
    CU_ASSERT_EQUAL(gate.slot, 0);
    atomic_store(&open, 1);
    engine_wait(en, &gate.t);
    engine_destroy(en);
}

/* Tasks submitted together, without a home (an evaluation's chunks): each waiting pool thread
 * is woken for one, so all of them run at once. Each task holds its thread until the test opens
 * the gate; the test waits (up to a minute) for every pool thread to have taken one. A wake-up
 * sent to a thread already woken would leave the others asleep, and this wait would time out. */
static void test_wakes_every_thread(void) {
    enum { THREADS = 6, POOL = THREADS - 1 };
    for (int homes = 1; homes >= 0; homes--) {
        setenv("SYNCSIM_ENGINE_HOMES", homes ? "1" : "0", 1);
        engine *en = NULL;
        CU_ASSERT_EQUAL_FATAL(engine_create(THREADS, &en), SS_OK);
        unsetenv("SYNCSIM_ENGINE_HOMES");
        atomic_int open = 0, started[POOL];
        gate_job gates[POOL];
        for (int i = 0; i < POOL; i++) {
            atomic_init(&started[i], 0);
            gates[i] = (gate_job){.t = {.run = gate_run, .arg = &gates[i]},
                                  .open = &open,
                                  .started = &started[i],
                                  .slot = -1};
            engine_submit(en, &gates[i].t);
        }
        const double t0 = engine_now_s();
        int running = 0;
        while (running < POOL && engine_now_s() - t0 < 60.0) {
            running = 0;
            for (int i = 0; i < POOL; i++)
                running += atomic_load(&started[i]);
            sched_yield();
        }
        CU_ASSERT_EQUAL(running, POOL);
        atomic_store(&open, 1);
        int seen[POOL] = {0};
        for (int i = 0; i < POOL; i++) {
            engine_wait(en, &gates[i].t);
            if (gates[i].slot >= 0 && gates[i].slot < POOL) seen[gates[i].slot]++;
        }
        for (int i = 0; i < POOL; i++) /* one each, on the pool's threads */
            CU_ASSERT_EQUAL(seen[i], 1);
        engine_destroy(en);
    }
}

/* path's JSON (NULL when it does not parse) */
static cJSON *read_json(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 22];
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return cJSON_Parse(buf);
}

/* The "X" events of a Chrome trace named `name`: how many, with ids[id] counted (ids < n_ids);
 * *bad counts those with a negative start or duration, and those that begin before the previous
 * one of that name on their row has ended (a row's events are written in the order they ended,
 * and one thread runs one task at a time). */
static int trace_events(const cJSON *doc, const char *name, int rows, int *bad, int *ids,
                        int n_ids) {
    const cJSON *evs = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
    int count = 0;
    *bad = 0;
    for (int row = 0; row < rows; row++) {
        double last_end = -1;
        const cJSON *e;
        cJSON_ArrayForEach(e, evs) {
            if (strcmp(cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring, "X") ||
                cJSON_GetObjectItemCaseSensitive(e, "tid")->valueint != row ||
                strcmp(cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring, name))
                continue;
            const double ts = cJSON_GetObjectItemCaseSensitive(e, "ts")->valuedouble;
            const double dur = cJSON_GetObjectItemCaseSensitive(e, "dur")->valuedouble;
            if (ts < 0 || dur < 0 || ts < last_end - 1e-3) (*bad)++;
            last_end = ts + dur;
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
            const int id = cJSON_GetObjectItemCaseSensitive(args, "id")->valueint;
            if (ids && id >= 0 && id < n_ids) ids[id]++;
            count++;
        }
    }
    return count;
}

/* The timeline: every task once, on the row of the slot that ran it, none overlapping on a row,
 * a row named for each slot, and a span added by the caller; with one thread and with three. */
static void test_trace(void) {
    char dir[] = "/tmp/ss_test_trace_XXXXXX";
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
    enum { TASKS = 40 };
    const int counts[] = {1, 3};
    for (int c = 0; c < 2; c++) {
        engine *en = NULL;
        CU_ASSERT_EQUAL_FATAL(engine_create(counts[c], &en), SS_OK);
        engine_trace_start(en);
        static sum_job jobs[TASKS];
        for (int i = 0; i < TASKS; i++) {
            jobs[i] = (sum_job){.t = {.run = sum_run, .arg = &jobs[i], .name = "sum", .id = i},
                                .index = i % 8};
            engine_submit(en, &jobs[i].t);
        }
        for (int i = 0; i < TASKS; i++)
            engine_wait(en, &jobs[i].t);
        const double t0 = engine_now_s();
        engine_trace_span(en, counts[c] - 1, "span", 7, t0, t0 + 1e-3);
        char path[300];
        snprintf(path, sizeof path, "%s/trace%d.json", dir, counts[c]);
        CU_ASSERT_EQUAL(engine_trace_write(en, path), SS_OK);
        engine_destroy(en);
        cJSON *doc = read_json(path);
        CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
        int ids[TASKS] = {0}, overlaps = -1;
        CU_ASSERT_EQUAL(trace_events(doc, "sum", counts[c], &overlaps, ids, TASKS), TASKS);
        CU_ASSERT_EQUAL(overlaps, 0);
        for (int i = 0; i < TASKS; i++)
            CU_ASSERT_EQUAL(ids[i], 1);
        /* each task on the row of its slot */
        const cJSON *e;
        int rows_named = 0, on_its_row = 0;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "traceEvents")) {
            const char *nm = cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring;
            const int tid = cJSON_GetObjectItemCaseSensitive(e, "tid")->valueint;
            if (!strcmp(nm, "thread_name")) rows_named++;
            if (!strcmp(nm, "sum")) {
                const int id = cJSON_GetObjectItemCaseSensitive(
                                   cJSON_GetObjectItemCaseSensitive(e, "args"), "id")
                                   ->valueint;
                on_its_row += jobs[id].slot == tid;
            }
        }
        CU_ASSERT_EQUAL(rows_named, counts[c]);
        CU_ASSERT_EQUAL(on_its_row, TASKS);
        int span_id[8] = {0};
        CU_ASSERT_EQUAL(trace_events(doc, "span", counts[c], &overlaps, span_id, 8), 1);
        CU_ASSERT_EQUAL(span_id[7], 1);
        const cJSON *other = cJSON_GetObjectItemCaseSensitive(doc, "otherData");
        CU_ASSERT_EQUAL(cJSON_GetObjectItemCaseSensitive(other, "threads")->valueint, counts[c]);
        CU_ASSERT_EQUAL(cJSON_GetObjectItemCaseSensitive(other, "dropped")->valueint, 0);
        cJSON_Delete(doc);
    }
    /* a timeline with no event yet: the rows' names alone, still JSON */
    engine *en = NULL;
    CU_ASSERT_EQUAL_FATAL(engine_create(2, &en), SS_OK);
    engine_trace_start(en);
    char path[300];
    snprintf(path, sizeof path, "%s/empty.json", dir);
    CU_ASSERT_EQUAL(engine_trace_write(en, path), SS_OK);
    engine_destroy(en);
    cJSON *doc = read_json(path);
    CU_ASSERT_PTR_NOT_NULL(doc);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "traceEvents")), 2);
    cJSON_Delete(doc);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

static void test_parse_threads(void) {
    int t = -1;
    CU_ASSERT_EQUAL(engine_parse_threads("3", &t), SS_OK);
    CU_ASSERT_EQUAL(t, 3);
    CU_ASSERT_EQUAL(engine_parse_threads("auto", &t), SS_OK);
    CU_ASSERT_EQUAL(t, engine_cores());
    const char *bad[] = {"0", "1025", "-2", "two", "2x", ""};
    for (int i = 0; i < 5; i++) { /* "" is auto (a configuration without the key) */
        CU_ASSERT_EQUAL(engine_parse_threads(bad[i], &t), SS_EUSAGE);
        CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "--threads"));
        CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "1 to 1024"));
    }
    CU_ASSERT_EQUAL(engine_parse_threads(bad[5], &t), SS_OK);
    CU_ASSERT_EQUAL(engine_create(0, &(engine *){NULL}), SS_EUSAGE);
    engine_share_cores(engine_cores() + 1); /* more jobs than cores: one thread each */
    CU_ASSERT_EQUAL(engine_parse_threads("auto", &t), SS_OK);
    CU_ASSERT_EQUAL(t, 1);
    engine_share_cores(1);
}

/* A sysfs cpu directory written here: cpu0 and cpu1 two threads of core 0, cpu2 core 1, cpu4
 * (cpu3 absent) core 0 of a second package, cpu5 offline; then this machine's. */
static void test_physical_cores(void) {
    char dir[] = "/tmp/ss_test_cpus_XXXXXX";
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
    const int cpu[] = {0, 1, 2, 4, 5}, pkg[] = {0, 0, 0, 1, 1}, core[] = {0, 0, 1, 0, 7};
    char cmd[1024];
    for (int i = 0; i < 5; i++) {
        snprintf(cmd, sizeof cmd,
                 "mkdir -p %s/cpu%d/topology && echo %d > %s/cpu%d/topology/physical_package_id "
                 "&& echo %d > %s/cpu%d/topology/core_id && echo %d > %s/cpu%d/online",
                 dir, cpu[i], pkg[i], dir, cpu[i], core[i], dir, cpu[i], cpu[i] == 5 ? 0 : 1, dir,
                 cpu[i]);
        CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
    }
    int logical = -1;
    CU_ASSERT_EQUAL(engine_physical_cores(dir, &logical), 3);
    CU_ASSERT_EQUAL(logical, 4);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
    CU_ASSERT_EQUAL(engine_physical_cores(dir, &logical), 0); /* nothing to read */
    CU_ASSERT_EQUAL(logical, 0);
    const int here = engine_physical_cores("/sys/devices/system/cpu", &logical);
    if (here > 0) { /* a container may hide the topology */
        CU_ASSERT(here <= logical);
        CU_ASSERT(logical >= 1);
    }
}

/* ---- runs: the same bytes on 1 and on 2 threads ---- */

static int same_file(const char *a, const char *b) {
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "cmp '%s' '%s' >&2", a, b);
    return ss_test_shell(cmd, NULL) == 0;
}

/* steps.trace's records and header, but for the configuration lines that name the output
 * directory and the thread count */
static int same_trace(const char *a, const char *b) {
    char cmd[4000];
    snprintf(cmd, sizeof cmd,
             "grep -v '^# config \\(out\\|threads\\) =' '%s/steps.trace' > '%s.t' && "
             "grep -v '^# config \\(out\\|threads\\) =' '%s/steps.trace' > '%s.t' && "
             "test $(grep -c '^[^#]' '%s.t') -gt 0 && cmp '%s.t' '%s.t' >&2",
             a, a, b, b, a, a, b);
    return ss_test_shell(cmd, NULL) == 0;
}

/* summary.json without its thread count: every other key, byte for byte */
static int same_summary(const char *a, const char *b) {
    char cmd[3400];
    snprintf(cmd, sizeof cmd,
             "grep -v '\"threads\"' '%s/summary.json' > '%s.s' && grep -v '\"threads\"' "
             "'%s/summary.json' > '%s.s' && cmp '%s.s' '%s.s' >&2",
             a, a, b, b, a, b);
    return ss_test_shell(cmd, NULL) == 0;
}

/* Runs `train ARGS --threads T` for T = 1, 2 and compares the outputs. */
static void expect_same_bytes(const char *name, const char *args, int compare_times) {
    char dirs[2][512];
    for (int t = 1; t <= 2; t++) {
        char cmd[1600], *out = NULL;
        snprintf(dirs[t - 1], sizeof dirs[0], "%s/%s-t%d", tmp_dir, name, t);
        snprintf(cmd, sizeof cmd, "train %s --threads %d --out %s", args, t, dirs[t - 1]);
        int rc = run_syncsim(cmd, &out);
        if (rc != 0) fprintf(stderr, "\n  syncsim %s: exit %d\n%s\n", cmd, rc, out);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        char want[64];
        snprintf(want, sizeof want, ", %d compute thread%s |", t, t == 1 ? "" : "s");
        CU_ASSERT_PTR_NOT_NULL(strstr(out, want)); /* the banner says it */
        free(out);
    }
    char a[1200], b[1200];
    snprintf(a, sizeof a, "%s/metrics.csv", dirs[0]);
    snprintf(b, sizeof b, "%s/metrics.csv", dirs[1]);
    if (compare_times) {
        CU_ASSERT(same_file(a, b));
        CU_ASSERT(same_trace(dirs[0], dirs[1]));
        CU_ASSERT(same_summary(dirs[0], dirs[1]));
    } else { /* measured: the losses and accuracies, not the times */
        char cmd[2400];
        snprintf(cmd, sizeof cmd,
                 "for d in '%s' '%s'; do grep -o '\"test_[a-z]*\":[^,]*' $d/summary.json > $d.acc; "
                 "done; cmp '%s.acc' '%s.acc' >&2",
                 dirs[0], dirs[1], dirs[0], dirs[1]);
        CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
    }
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "grep -q '\"threads\":\t2,' '%s/summary.json'", dirs[1]);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
}

static void test_bsp_mlp_same_bytes(void) {
    expect_same_bytes("bsp",
                      "--policy bsp --workers 4 --dataset synthetic --model mlp:64 "
                      "--epochs 0.3 --eval-every 5 --seed 3",
                      1);
}

/* An evaluation at every step, of a model with batch norm: each evaluation's chunks run beside
 * the next step of the worker that made it due (emulation_eval.c), on the replicas' statistics
 * as they were when it began */
static void test_eval_every_step_same_bytes(void) {
    expect_same_bytes("evalstep",
                      "--policy bsp --workers 4 --dataset synthetic --model resnet:8 --batch 16 "
                      "--epochs 0.03 --eval-every 1 --seed 7",
                      1);
}

static void test_selsync_cnn_same_bytes(void) {
    expect_same_bytes("selsync",
                      "--policy selsync --workers 4 --dataset synthetic --model "
                      "cnn:4,8,16 --epochs 0.1 --eval-every 4 --delta 0.05 --seed 5",
                      1);
}

/* Two parameter servers, whose updates and pulls of mlp:128's slices run in ranges across the
 * threads. */
static void test_ssp_same_bytes(void) {
    expect_same_bytes("ssp",
                      "--policy ssp --workers 4 --dataset synthetic --model mlp:128 "
                      "--ps-servers 2 --epochs 0.2 --seed 2",
                      1);
}

static void test_measured_same_model(void) {
    expect_same_bytes("measured",
                      "--policy bsp --workers 4 --dataset synthetic --model mlp:32 "
                      "--epochs 0.2 --compute measured --seed 4",
                      0);
}

/* FedAvg with half the workers sampled a round: group averages, a broadcast to the others,
 * local steps in between (Nesterov momentum); mlp:128's 100,000 parameters are averaged in
 * ranges across the threads. */
static void test_fedavg_same_bytes(void) {
    expect_same_bytes("fedavg",
                      "--policy fedavg --workers 4 --dataset synthetic --model mlp:128 "
                      "--epochs 0.2 --local-steps 3 --client-fraction 0.5 --nesterov --seed 6",
                      1);
}

/* DS-Sync's pairs average apart, each pair its own mean (in ranges, while the other pair's
 * steps may be in flight), after a clipped local step. */
static void test_dssync_same_bytes(void) {
    expect_same_bytes("dssync",
                      "--policy dssync --workers 4 --dataset synthetic --model mlp:128 "
                      "--epochs 0.2 --group-size 2 --clip-norm 0.5 --seed 7",
                      1);
}

/* DLCP's partial exchanges: masked copies, the magnitude order read from every replica. */
static void test_dlcp_same_bytes(void) {
    expect_same_bytes("dlcp",
                      "--policy bsp --workers 4 --dataset synthetic --model mlp:32 "
                      "--epochs 0.2 --loss-tolerance 0.3 --priority magnitude --seed 10",
                      1);
}

/* ---- the memory estimate ---- */

static void test_memory_counts_threads(void) {
    device *dev = NULL;
    char notice[256];
    CU_ASSERT_EQUAL_FATAL(device_open("cpu", &dev, notice, sizeof notice), SS_OK);
    model_spec spec;
    CU_ASSERT_EQUAL_FATAL(model_spec_parse(&spec, "cnn:4,8,16", 1, 28, 28, 10), SS_OK);
    model *probe = NULL;
    CU_ASSERT_EQUAL_FATAL(model_create(dev, &spec, 1, 32, &probe), SS_OK);
    const double params = model_param_bytes(probe);
    model_destroy(probe);
    double t1, t2, t8;
    CU_ASSERT_EQUAL(memory_estimate_run(dev, &spec, 4, 1, 32, 2, 8, &t1), SS_OK);
    CU_ASSERT_EQUAL(memory_estimate_run(dev, &spec, 4, 2, 32, 2, 8, &t2), SS_OK);
    CU_ASSERT_EQUAL(memory_estimate_run(dev, &spec, 4, 8, 32, 2, 8, &t8), SS_OK);
    /* a second thread brings a staging area and two evaluation models (at least their
     * parameters each); every thread more, one model and its staging */
    const double staging = sizeof(float) * 28.0 * 28.0 * 33.0 + 32.0; /* samples, labels */
    CU_ASSERT(t2 - t1 >= 2 * params + staging);
    CU_ASSERT(t8 - t2 >= 6 * (params + staging));
    /* the same evaluation model for each thread from the second on (within what the allocator's
     * accounting of one model varies between probes) */
    const double one_model = (t2 - t1 - staging) / 2.0;
    CU_ASSERT_DOUBLE_EQUAL((t8 - t2) / 6.0 - staging, one_model, 0.01 * one_model);
    /* the vectors beside the replicas: two averages; DS-Sync's one per group and one more; the
     * servers' parameters and momentum of SSP and ASP; each one parameter vector more */
    CU_ASSERT_EQUAL(memory_run_vectors(16, 0, 0), 2);
    CU_ASSERT_EQUAL(memory_run_vectors(16, 0, 2), 9);
    CU_ASSERT_EQUAL(memory_run_vectors(15, 0, 4), 5);
    CU_ASSERT_EQUAL(memory_run_vectors(16, 1, 0), 4);
    double t9;
    CU_ASSERT_EQUAL(memory_estimate_run(dev, &spec, 4, 1, 32, 9, 8, &t9), SS_OK);
    /* above 64 samples the model is measured at 32 and 64 and extrapolated: as creating it at
     * that batch measures, exactly on the device and within 0.5 % on the host (0.05 % seen) */
    const char *models[] = {"cnn:4,8,16", "resnet:8", "vgg:11", "gpt:1,32,2,16"};
    for (int i = 0; i < 4; i++) {
        model_spec ms;
        CU_ASSERT_EQUAL_FATAL(model_spec_parse(&ms, models[i], 1, 28, 28, 10), SS_OK);
        if (i == 3) ms.classes = 500; /* a vocabulary */
        memory_model_size ex, direct;
        CU_ASSERT_EQUAL(memory_model_bytes(dev, &ms, 100, &ex), SS_OK);
        CU_ASSERT_EQUAL(memory_model_probe(dev, &ms, 100, &direct), SS_OK);
        SS_CHECK_CLOSE(ex.device, direct.device, 0, 1e-9);
        SS_CHECK_CLOSE(ex.host, direct.host, 0, 0.005);
        CU_ASSERT_EQUAL(ex.params, direct.params);
    }
    /* (the two probes' allocator accounting differs by a few hundred bytes) */
    CU_ASSERT_DOUBLE_EQUAL(t9 - t1, 7 * params, 0.25 * params);
    device_close(dev);
}

/* The size of a model too large to create at the measuring batch: measured at 1 and 2 samples
 * and extrapolated, the model never created at the batch. In a child process with 256 MB
 * available (SYNCSIM_MEMORY_LIMIT), a gpt whose logits alone take 1.31 GB at batch 64 is sized
 * without the process's resident memory growing by half of that; the extrapolation from 1 and
 * 2 samples is what creating small models at 64 measures. */
typedef struct big_out {
    int rc;
    double device, grew_kb;
} big_out;

static double max_rss_kb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss;
}

static int size_big_gpt(void *arg, isolate_blob *result) {
    (void)arg;
    big_out o = {0};
    setenv("SYNCSIM_MEMORY_LIMIT", "256MB", 1);
    device *dev = NULL;
    char notice[256];
    model_spec spec;
    o.rc = device_open("cpu", &dev, notice, sizeof notice);
    if (o.rc == SS_OK) o.rc = model_spec_parse(&spec, "gpt:1,32,2,256", 1, 28, 28, 10);
    if (o.rc == SS_OK) {
        spec.classes = 20000; /* logits (64 x 256, 20,000) */
        memory_model_size m;
        const double before = max_rss_kb();
        o.rc = memory_model_bytes(dev, &spec, 64, &m);
        o.grew_kb = max_rss_kb() - before;
        o.device = m.device;
    }
    if (dev) device_close(dev);
    isolate_blob_append(result, &o, sizeof o);
    return SS_OK;
}

static void test_memory_too_large_not_created(void) {
    isolate_blob b = {0};
    CU_ASSERT_EQUAL_FATAL(isolate_call(size_big_gpt, NULL, &b), SS_OK);
    CU_ASSERT_EQUAL_FATAL(b.bytes, sizeof(big_out));
    big_out o;
    memcpy(&o, b.data, sizeof o);
    isolate_blob_free(&b);
    const double logits = 4.0 * 64 * 256 * 20000;
    printf("\n    estimate %.3f GB, resident memory grew by %.1f MB", o.device / 1e9,
           o.grew_kb / 1e3);
    CU_ASSERT_EQUAL(o.rc, SS_OK);
    CU_ASSERT(o.device >= logits);
    CU_ASSERT(o.grew_kb * 1024.0 < 0.5 * logits);
    /* the extrapolation from 1 and 2 samples (nothing fits in 1 kB) against the models created at
     * 64: a gpt's device bytes as created (they grow linearly with the batch); the layer graphs'
     * never under by more than 2 % (over where their convolutions' column buffers stop growing
     * with the batch: the cnn's twice as large), so that a model it lets through fits */
    device *dev = NULL;
    char notice[256];
    CU_ASSERT_EQUAL_FATAL(device_open("cpu", &dev, notice, sizeof notice), SS_OK);
    const char *models[] = {"cnn:4,8,16", "resnet:8", "gpt:1,32,2,16"};
    for (int i = 0; i < 3; i++) {
        model_spec ms;
        CU_ASSERT_EQUAL_FATAL(model_spec_parse(&ms, models[i], 1, 28, 28, 10), SS_OK);
        if (i == 2) ms.classes = 500;
        memory_model_size ex, direct;
        setenv("SYNCSIM_MEMORY_LIMIT", "1kB", 1);
        CU_ASSERT_EQUAL(memory_model_bytes(dev, &ms, 64, &ex), SS_OK);
        unsetenv("SYNCSIM_MEMORY_LIMIT");
        CU_ASSERT_EQUAL(memory_model_probe(dev, &ms, 64, &direct), SS_OK);
        printf("\n    %s at 64 samples: device %.0f B extrapolated, %.0f B created", models[i],
               ex.device, direct.device);
        CU_ASSERT(ex.device >= 0.98 * direct.device && ex.host >= 0.98 * direct.host);
        if (i == 2) SS_CHECK_CLOSE(ex.device, direct.device, 0, 1e-9);
    }
    device_close(dev);
}

/* ---- bad input ---- */

static void test_bad_threads(void) {
    const char *bad[] = {"0", "1025", "many"};
    for (int i = 0; i < 3; i++) {
        char args[600], *out = NULL;
        snprintf(args, sizeof args,
                 "train --policy bsp --workers 2 --dataset synthetic --epochs 0.01 --threads %s "
                 "--out %s/bad",
                 bad[i], tmp_dir);
        CU_ASSERT_EQUAL(run_syncsim(args, &out), 2);
        char want[64];
        snprintf(want, sizeof want, "--threads %s: give a thread count from 1 to 1024", bad[i]);
        if (!strstr(out, want)) fprintf(stderr, "\n  %s\n", out);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
        free(out);
    }
    char args[600], *out = NULL; /* bench emulation too, before either run */
    snprintf(args, sizeof args, "bench emulation --dataset synthetic --threads 0 --out %s/bad",
             tmp_dir);
    CU_ASSERT_EQUAL(run_syncsim(args, &out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--threads 0: give a thread count from 1 to 1024"));
    free(out);
    char path[600];
    snprintf(path, sizeof path, "%s/bad", tmp_dir);
    CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0); /* refused before any output */
}

/* train --engine-trace: the timeline of an emulated run, with each worker's steps on it, and the
 * same outputs as without it */
static void test_train_engine_trace(void) {
    const char *args = "train --policy bsp --workers 4 --dataset synthetic --model mlp:32 "
                       "--epochs 0.2 --eval-every 3 --threads 2 --seed 4";
    char cmd[1200], *out = NULL;
    for (int traced = 0; traced < 2; traced++) {
        snprintf(cmd, sizeof cmd, "%s --out %s/trace%d%s", args, tmp_dir, traced,
                 traced ? " --engine-trace" : "");
        const int rc = run_syncsim(cmd, &out);
        if (rc != 0) fprintf(stderr, "\n  %s\n", out);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT_EQUAL(strstr(out, "engine-trace.json,") != NULL, traced);
        free(out);
    }
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/trace0/metrics.csv", tmp_dir);
    snprintf(b, sizeof b, "%s/trace1/metrics.csv", tmp_dir);
    CU_ASSERT(same_file(a, b));
    snprintf(a, sizeof a, "%s/trace0/engine-trace.json", tmp_dir);
    CU_ASSERT_NOT_EQUAL(access(a, F_OK), 0);
    snprintf(b, sizeof b, "%s/trace1/engine-trace.json", tmp_dir);
    cJSON *doc = read_json(b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    int steps[4] = {0}, bad = -1;
    const int n = trace_events(doc, "step", 2, &bad, steps, 4);
    CU_ASSERT(n >= 4);
    CU_ASSERT_EQUAL(bad, 0);
    for (int w = 0; w < 4; w++)
        CU_ASSERT(steps[w] == n / 4); /* every worker, as many steps each */
    CU_ASSERT(trace_events(doc, "evaluate", 2, &bad, NULL, 0) > 0);
    CU_ASSERT_EQUAL(bad, 0);
    cJSON_Delete(doc);
}

/* ---- bench emulation ---- */

static void test_bench_emulation(void) {
    char args[800], *out = NULL;
    snprintf(args, sizeof args,
             "bench emulation --dataset synthetic --model mlp:32 --workers 4 --epochs 0.1 "
             "--threads 2 --eval-every 1000 --out %s/bench --csv %s/bench.csv",
             tmp_dir, tmp_dir);
    int rc = run_syncsim(args, &out);
    if (rc != 0) fprintf(stderr, "\n  %s\n", out);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "samples/s"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "serial share on 1 thread: "));
    free(out);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cat %s/bench.csv", tmp_dir);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, &out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "model,policy,workers,threads,steps,samples,wall_s,"
                                       "samples_per_s,speedup,same_params,work_s,serial_share,"
                                       "eval_s,train_speedup\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nmlp:32,bsp,4,1,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nmlp:32,bsp,4,2,"));
    char *line2 = strstr(out, "\nmlp:32,bsp,4,2,");
    CU_ASSERT(line2 && strstr(line2, ",yes,")); /* the same parameters on 2 threads */
    /* the 1-thread row: the engine's work and the serial share, a fraction of its wall time */
    const char *line1 = strstr(out, "\nmlp:32,bsp,4,1,");
    double fields[12];
    CU_ASSERT_EQUAL_FATAL(
        line1 &&
            sscanf(line1 + 1, "%*[^,],%*[^,],%lf,%lf,%lf,%lf,%lf,%lf,%lf,%*[^,],%lf,%lf,%lf,%lf",
                   &fields[0], &fields[1], &fields[2], &fields[3], &fields[4], &fields[5],
                   &fields[6], &fields[7], &fields[8], &fields[9], &fields[10]) == 11,
        1);
    const double wall = fields[4], work = fields[7], serial = fields[8], eval = fields[9];
    CU_ASSERT(work > 0 && work <= wall * 1.001);
    CU_ASSERT(serial >= 0 && serial < 1);
    CU_ASSERT_DOUBLE_EQUAL(serial, 1 - work / wall, 2e-3);
    /* the one evaluation of the consensus model, at the last step (--eval-every beyond it): a
     * part of the loop, and of the engine's work (its pass over the test set) */
    CU_ASSERT(eval > 0 && eval < wall);
    CU_ASSERT_DOUBLE_EQUAL(fields[10], 1.0, 1e-9); /* the 1-thread row against itself */
    /* the 2-thread row: its evaluation time, a part of its loop (the last step's evaluation,
     * which runs beside the steps, finished inside the loop), and the training's speedup */
    double wall2 = -1, eval2 = -1, train2 = -1;
    CU_ASSERT(line2 && sscanf(line2 + 1,
                              "%*[^,],%*[^,],%*[^,],%*[^,],%*[^,],%*[^,],%lf,%*[^,],%*[^,],"
                              "%*[^,],%*[^,],,%lf,%lf",
                              &wall2, &eval2, &train2) == 3);
    CU_ASSERT(eval2 > 0 && eval2 < wall2 && train2 > 0);
    free(out);
}

static CU_TestInfo engine_tests[] = {
    {"engine: every task runs once, on the pool's threads, any thread count",
     test_pool_runs_each_task_once},
    {"engine: homed tasks run on their home slot while it is free", test_homes},
    {"engine: homed tasks run elsewhere while their home is busy", test_homes_busy},
    {"engine: tasks submitted together wake every waiting thread", test_wakes_every_thread},
    {"engine: the timeline, every task once on its thread's row", test_trace},
    {"engine: --threads auto, N, and what it refuses", test_parse_threads},
    {"engine: physical cores from a sysfs cpu directory", test_physical_cores},
    {"memory estimate: grows by an evaluation model and a staging area per thread",
     test_memory_counts_threads},
    {"memory estimate: a model too large to create is sized from 1 and 2 samples",
     test_memory_too_large_not_created},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo run_tests[] = {
    {"train bsp mlp: --threads 1 and 2 give the same bytes", test_bsp_mlp_same_bytes},
    {"train selsync cnn: --threads 1 and 2 give the same bytes", test_selsync_cnn_same_bytes},
    {"train bsp resnet:8, an evaluation every step: --threads 1 and 2 give the same bytes",
     test_eval_every_step_same_bytes},
    {"train ssp, two servers: --threads 1 and 2 give the same bytes", test_ssp_same_bytes},
    {"train --compute measured: --threads 1 and 2 give the same model", test_measured_same_model},
    {"train fedavg, partial clients: --threads 1 and 2 give the same bytes",
     test_fedavg_same_bytes},
    {"train dssync, clipped: --threads 1 and 2 give the same bytes", test_dssync_same_bytes},
    {"train bsp with DLCP's drops: --threads 1 and 2 give the same bytes", test_dlcp_same_bytes},
    {"train --threads 0, 1025, many, bench emulation --threads 0: exit 2 naming the option",
     test_bad_threads},
    {"train --engine-trace: the workers' steps on the timeline, the same outputs",
     test_train_engine_trace},
    {"bench emulation: table and CSV, the same parameters on 2 threads", test_bench_emulation},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"compute engine", NULL, NULL, NULL, NULL, engine_tests},
    {"runs on the engine", suite_init, suite_clean, NULL, NULL, run_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}
