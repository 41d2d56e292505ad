/* The workers' step computations in flight (emulation_jobs.h). */
#include "emu/emulation_jobs.h"
#include "common/engine.h"
#include "common/status.h"
#include "emu/partition.h"
#include "kernels/device.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct em_job {
    em_jobs *owner;
    int worker;
    model *m;
    engine_task task;
    int in_flight; /* submitted and not settled */
    int deferred;  /* the job runs the worker's deferred work first */
    double wall_s; /* the job's wall time, deferred work included */
    em_job_out out;
} em_job;

struct em_jobs {
    em_jobs_config cfg;
    engine *en;
    em_job *jobs;     /* (N) one per worker: a worker has at most one step in flight */
    size_t **indices; /* (N, max_batch) */
    float **x;        /* (threads, (max_batch + 1) * features) staging, one per engine slot, and the
                         augmentation's scratch of one sample */
    uint8_t **y;      /* (threads, max_batch) */
    int *fifo;        /* (N) workers in flight, in the order their jobs began (a ring) */
    model **eval;     /* (threads) models for the evaluations, one per slot (NULL: 1 thread) */
    uint8_t *deferred; /* (N) the worker has deferred work that no job has taken yet */
    int *flush;        /* (N) scratch: the workers whose deferred work runs across the engine */
    int head, count;
    double work_s; /* wall seconds of the work the engine runs or splits (jobs, parallel parts) */
    struct em_jobs_eval *ev; /* the evaluation begun and not yet finished, or NULL */
    /* em_jobs_mark: the jobs at the FIFO's head that settle together, then mark_fn (NULL: no
     * mark); the submits still allowed before */
    void (*mark_fn)(void *ctx);
    void *mark_ctx;
    int mark_jobs, mark_submits;
};

static void settle_jobs(em_jobs *j);
static void flush_deferred(em_jobs *j, const int *group, int n);

/* One worker's step: the batch, the passes, the norms. Touches only its replica and its slot. */
static void job_run_hooked(em_job *job, int slot, void (*grad_ready)(void *ctx, int layer),
                           void *hook_ctx) {
    em_jobs *j = job->owner;
    device *dev = j->cfg.dev;
    em_job_out *o = &job->out;
    const double start_s = engine_now_s();
    if (job->deferred) {
        j->cfg.deferred(j->cfg.ctx, job->worker);
        engine_trace_span(j->en, slot, "deferred", job->worker, start_s, engine_now_s());
    }
    dataset_gather(j->cfg.train, j->indices[job->worker], o->samples, j->x[slot], j->y[slot]);
    if (j->cfg.aug)
        augment_batch_into(j->cfg.aug,
                           j->x[slot] + dataset_features(j->cfg.train) * (size_t)j->cfg.max_batch,
                           j->x[slot], o->samples, job->worker, o->step);
    const double t0 = j->cfg.measure_time ? engine_now_s() : 0.0;
    o->loss = model_forward_backward_each(job->m, j->x[slot], j->y[slot], o->samples, grad_ready,
                                          hook_ctx);
    if (j->cfg.measure_time) {
        device_sync(dev);
        o->measured_s = engine_now_s() - t0;
    }
    const size_t params = model_param_count(job->m);
    o->grad_norm = device_nrm2(dev, params, model_grads(job->m));
    o->layer_norm_sum = 0;
    if (j->cfg.layer_norms)
        for (int i = 0; i < model_view_count(job->m); i++) {
            const model_view *v = model_view_at(job->m, i);
            o->layer_norm_sum += device_nrm2(dev, v->count, model_grads(job->m) + v->offset);
        }
    job->wall_s = engine_now_s() - start_s;
}

/* A task on an engine thread issues its device work on the slot's own lane (a CUDA stream). */
static void lane_enter(em_jobs *j, int slot) {
    if (engine_threads(j->en) > 1) device_lane_enter(j->cfg.dev, slot + 1);
}

static void lane_leave(em_jobs *j) {
    if (engine_threads(j->en) > 1) device_lane_leave(j->cfg.dev);
}

static void job_run(void *arg, int slot) {
    em_job *job = arg;
    lane_enter(job->owner, slot);
    job_run_hooked(job, slot, NULL, NULL);
    lane_leave(job->owner);
}

int em_jobs_create(const em_jobs_config *cfg, em_jobs **out) {
    *out = NULL;
    SS_ASSERT(cfg->workers >= 1 && cfg->max_batch >= 1);
    em_jobs *j = ss_calloc(1, sizeof *j);
    j->cfg = *cfg;
    int rc = engine_create(cfg->threads >= 1 ? cfg->threads : 1, &j->en);
    if (rc != SS_OK) {
        free(j);
        return rc;
    }
    if (cfg->trace) engine_trace_start(j->en);
    const int n = cfg->workers, t = engine_threads(j->en);
    const size_t features = dataset_features(cfg->train);
    j->jobs = ss_calloc((size_t)n, sizeof *j->jobs);
    j->indices = ss_calloc((size_t)n, sizeof *j->indices);
    j->fifo = ss_calloc((size_t)n, sizeof *j->fifo);
    j->deferred = ss_calloc((size_t)n, 1);
    j->flush = ss_calloc((size_t)n, sizeof *j->flush);
    for (int w = 0; w < n; w++) {
        j->jobs[w] = (em_job){.owner = j, .worker = w};
        j->jobs[w].task = (engine_task){
            .run = job_run, .arg = &j->jobs[w], .name = "step", .id = w, .home = 1 + w};
        j->indices[w] = ss_malloc(sizeof(size_t) * (size_t)cfg->max_batch);
    }
    j->x = ss_calloc((size_t)t, sizeof *j->x);
    j->y = ss_calloc((size_t)t, sizeof *j->y);
    for (int s = 0; s < t; s++) {
        /* the batch, and one sample more: the augmentation's scratch */
        j->x[s] = ss_malloc(sizeof(float) * features * ((size_t)cfg->max_batch + 1));
        j->y[s] = ss_malloc((size_t)cfg->max_batch);
    }
    if (t > 1) rc = device_lanes_reserve(cfg->dev, t);
    if (t > 1 && rc == SS_OK) {
        j->eval = ss_calloc((size_t)t, sizeof *j->eval);
        for (int s = 0; s < t && rc == SS_OK; s++)
            rc = model_create(cfg->dev, cfg->spec, cfg->seed, cfg->max_batch, &j->eval[s]);
    }
    if (rc != SS_OK) {
        em_jobs_destroy(j);
        return rc;
    }
    *out = j;
    return SS_OK;
}

void em_jobs_destroy(em_jobs *j) {
    if (!j) return;
    if (j->ev) em_jobs_evaluate_finish(j, NULL); /* its tasks run before the models go */
    j->mark_fn = NULL;                           /* a mark left (a run stopped early) is dropped */
    settle_jobs(j); /* deferred work left is dropped with the replicas */
    const int t = engine_threads(j->en);
    engine_destroy(j->en);
    for (int w = 0; w < j->cfg.workers; w++)
        free(j->indices[w]);
    for (int s = 0; s < t; s++) {
        free(j->x[s]);
        free(j->y[s]);
        if (j->eval && j->eval[s]) model_destroy(j->eval[s]);
    }
    free(j->eval);
    free(j->x);
    free(j->y);
    free(j->indices);
    free(j->jobs);
    free(j->fifo);
    free(j->deferred);
    free(j->flush);
    free(j);
}

int em_jobs_threads(const em_jobs *j) {
    return engine_threads(j->en);
}

size_t *em_jobs_indices(em_jobs *j, int w) {
    SS_ASSERT(!j->jobs[w].in_flight);
    return j->indices[w];
}

void em_jobs_staging(em_jobs *j, float **x, uint8_t **y) {
    SS_ASSERT(j->count == 0);
    *x = j->x[0];
    *y = j->y[0];
}

static void settle_one(em_jobs *j);

/* A mark set (em_jobs_mark): its jobs settled, in order, then its function. */
static void mark_resolve(em_jobs *j) {
    if (!j->mark_fn) return;
    void (*fn)(void *) = j->mark_fn;
    j->mark_fn = NULL;
    for (int i = 0; i < j->mark_jobs; i++)
        settle_one(j);
    fn(j->mark_ctx);
}

void em_jobs_mark(em_jobs *j, void (*fn)(void *ctx), void *ctx) {
    mark_resolve(j);
    if (j->count == 0) {
        fn(ctx);
        return;
    }
    j->mark_fn = fn;
    j->mark_ctx = ctx;
    j->mark_jobs = j->count;
    j->mark_submits = 1;
}

void em_jobs_resolve(em_jobs *j) {
    mark_resolve(j);
}

int em_jobs_in_flight(const em_jobs *j, int w) {
    return j->jobs[w].in_flight;
}

/* Settles the oldest job in flight (and, first, a mark's jobs and its function). */
static void settle_oldest(em_jobs *j) {
    if (j->mark_fn) {
        mark_resolve(j);
        return;
    }
    settle_one(j);
}

/* Settles the oldest job in flight: waits for it, then the source's bookkeeping. */
static void settle_one(em_jobs *j) {
    SS_ASSERT(j->count > 0);
    em_job *job = &j->jobs[j->fifo[j->head]];
    engine_wait(j->en, &job->task);
    job->in_flight = 0;
    j->head = (j->head + 1) % j->cfg.workers;
    j->count--;
    j->work_s += job->wall_s;
    if (job->deferred) {
        job->deferred = 0;
        j->cfg.deferred_done(j->cfg.ctx, job->worker);
    }
    j->cfg.settled(j->cfg.ctx, job->worker, &job->out);
}

void em_jobs_submit(em_jobs *j, int w, model *m, long step, int samples,
                    void (*grad_ready)(void *ctx, int layer), void *hook_ctx) {
    if (j->mark_fn && j->mark_submits-- <= 0) mark_resolve(j);
    em_job *job = &j->jobs[w];
    SS_ASSERT(!job->in_flight && samples >= 1 && samples <= j->cfg.max_batch);
    job->m = m;
    job->out = (em_job_out){.step = step, .samples = samples};
    job->deferred = j->deferred[w]; /* the job runs them first, on its thread */
    j->deferred[w] = 0;
    if (grad_ready) settle_jobs(j); /* slot 0 is free, and the order kept */
    job->in_flight = 1;
    j->fifo[(j->head + j->count) % j->cfg.workers] = w;
    j->count++;
    if (grad_ready) {
        job_run_hooked(job, 0, grad_ready, hook_ctx);
        job->task.state = 3;
    } else {
        engine_submit(j->en, &job->task);
    }
}

void em_jobs_settle_worker(em_jobs *j, int w) {
    while (j->jobs[w].in_flight)
        settle_oldest(j);
}

void em_jobs_own(em_jobs *j, int w) {
    mark_resolve(j);
    em_jobs_settle_worker(j, w);
    if (!j->deferred[w]) return;
    const double t0 = engine_now_s();
    j->deferred[w] = 0;
    j->cfg.deferred(j->cfg.ctx, w);
    j->cfg.deferred_done(j->cfg.ctx, w);
    j->work_s += engine_now_s() - t0;
}

void em_jobs_defer(em_jobs *j, int w) {
    mark_resolve(j);
    em_jobs_settle_worker(j, w);
    j->deferred[w] = 1;
}

const em_job_out *em_jobs_take(em_jobs *j, int w) {
    em_jobs_settle_worker(j, w);
    return &j->jobs[w].out;
}

void em_jobs_settle_before(em_jobs *j, long step) {
    int last = -1; /* position in the FIFO of the last job of an earlier step */
    for (int i = 0; i < j->count; i++)
        if (j->jobs[j->fifo[(j->head + i) % j->cfg.workers]].out.step < step) last = i;
    const int left = j->count - (last + 1); /* a mark may settle more at once */
    while (j->count > left)
        settle_oldest(j);
}

static void settle_jobs(em_jobs *j) {
    while (j->count > 0)
        settle_oldest(j);
}

void em_jobs_settle_all(em_jobs *j) {
    mark_resolve(j);
    settle_jobs(j);
    flush_deferred(j, NULL, j->cfg.workers);
}

double em_jobs_work_seconds(const em_jobs *j) {
    return j->work_s;
}

int em_jobs_trace_write(const em_jobs *j, const char *path) {
    return engine_trace_write(j->en, path);
}

/* ---- evaluations ---- */

typedef struct par_task {
    engine_task t;
    em_jobs *j;
    void (*fn)(void *ctx, int i, int slot);
    void *ctx;
    int i;
} par_task;

static void par_run(void *arg, int slot) {
    par_task *p = arg;
    lane_enter(p->j, slot);
    p->fn(p->ctx, p->i, slot);
    lane_leave(p->j);
}

/* One task of parallel_for, timed: its wall time joins the engine's work. */
typedef struct par_timed {
    void (*fn)(void *ctx, int i, int slot);
    void *ctx;
    double wall_s;
} par_timed;

static void par_timed_run(void *ctx, int i, int slot) {
    par_timed *pt = ctx;
    const double t0 = engine_now_s();
    pt->fn(pt->ctx, i, slot);
    pt->wall_s = engine_now_s() - t0;
}

/* n tasks of fn submitted together (parallel_submit), waited for later (parallel_wait) */
typedef struct par_batch {
    int n;
    par_task *ts;
    par_timed *timed;
} par_batch;

/* fn(ctx, i, slot) for i = 0 .. n - 1 queued on the engine's threads (after settling every
 * job), tasks named `name` on its timeline */
static par_batch parallel_submit(em_jobs *j, const char *name, int n,
                                 void (*fn)(void *ctx, int i, int slot), void *ctx) {
    settle_jobs(j);
    par_batch b = {n, ss_calloc((size_t)n, sizeof *b.ts), ss_calloc((size_t)n, sizeof *b.timed)};
    for (int i = 0; i < n; i++) {
        b.timed[i] = (par_timed){.fn = fn, .ctx = ctx};
        b.ts[i] = (par_task){.t = {.run = par_run, .arg = &b.ts[i], .name = name, .id = i},
                             .j = j,
                             .fn = par_timed_run,
                             .ctx = &b.timed[i],
                             .i = i};
        engine_submit(j->en, &b.ts[i].t);
    }
    return b;
}

/* returns once all of b's tasks have run (the caller runs queued tasks meanwhile) */
static void parallel_wait(em_jobs *j, par_batch *b) {
    for (int i = 0; i < b->n; i++) {
        engine_wait(j->en, &b->ts[i].t);
        j->work_s += b->timed[i].wall_s;
    }
    free(b->timed);
    free(b->ts);
    *b = (par_batch){0};
}

/* fn(ctx, i, slot) for i = 0 .. n - 1 on the engine's threads; returns once all have run. */
static void parallel_for(em_jobs *j, const char *name, int n,
                         void (*fn)(void *ctx, int i, int slot), void *ctx) {
    par_batch b = parallel_submit(j, name, n, fn, ctx);
    parallel_wait(j, &b);
}

/* ---- element-wise work in ranges, shared with the free threads ---- */

typedef struct share_ctx {
    atomic_int next; /* the next range to take */
    int n;           /* ranges */
    size_t total, range;
    void (*fn)(void *ctx, size_t lo, size_t count);
    void *ctx;
} share_ctx;

static void share_loop(share_ctx *sc) {
    for (int r; (r = atomic_fetch_add(&sc->next, 1)) < sc->n;) {
        const size_t lo = (size_t)r * sc->range;
        sc->fn(sc->ctx, lo, sc->total - lo < sc->range ? sc->total - lo : sc->range);
    }
}

static void share_help(void *ctx, int i, int slot) {
    (void)i, (void)slot;
    share_loop(ctx);
}

#define SHARE_MIN_FLOATS   65536 /* below this one thread is as fast */
#define SHARE_RANGE_FLOATS 16384 /* the smallest range a thread takes (64 KiB) */

/* fn over [0, total) in ranges of `range` (the last may be shorter), timed as the engine's
 * work: the caller takes ranges, and helpers queued on the engine take the others if a thread
 * is free before the caller is done; those not started then are taken back. */
static void share(em_jobs *j, const char *name, size_t total, size_t range,
                  void (*fn)(void *ctx, size_t lo, size_t count), void *ctx) {
    const double t0 = engine_now_s();
    const int t = engine_threads(j->en);
    share_ctx sc = {.n = (int)((total + range - 1) / range),
                    .total = total,
                    .range = range,
                    .fn = fn,
                    .ctx = ctx};
    atomic_init(&sc.next, 0);
    const int helpers = sc.n - 1 < t - 1 ? sc.n - 1 : t - 1; /* the pool's threads: t - 1 */
    par_task *ts = ss_calloc((size_t)helpers, sizeof *ts);
    par_timed *timed = ss_calloc((size_t)helpers, sizeof *timed);
    for (int i = 0; i < helpers; i++) {
        timed[i] = (par_timed){.fn = share_help, .ctx = &sc};
        ts[i] = (par_task){.t = {.run = par_run, .arg = &ts[i], .name = name, .id = -1},
                           .j = j,
                           .fn = par_timed_run,
                           .ctx = &timed[i],
                           .i = i};
        engine_submit(j->en, &ts[i].t);
    }
    share_loop(&sc); /* the caller works too: a helper not started yet is taken back */
    const double t1 = engine_now_s();
    engine_trace_span(j->en, t - 1, name, -1, t0, t1);
    j->work_s += t1 - t0;
    for (int i = 0; i < helpers; i++) {
        if (!engine_cancel(j->en, &ts[i].t)) engine_wait(j->en, &ts[i].t);
        j->work_s += timed[i].wall_s;
    }
    free(timed);
    free(ts);
}

/* em_jobs_ranges, named on the engine's timeline */
static void ranges_named(em_jobs *j, const char *name, size_t total,
                         void (*fn)(void *ctx, size_t lo, size_t count), void *ctx) {
    /* serial on any thread count; on a GPU one launch over all of it beats ranges on streams */
    if (total < SHARE_MIN_FLOATS || device_get_kind(j->cfg.dev) == DEVICE_KIND_CUDA) {
        fn(ctx, 0, total);
        return;
    }
    const int t = engine_threads(j->en); /* one thread: one range */
    size_t range = (total + (size_t)t - 1) / (size_t)t;
    if (range < SHARE_RANGE_FLOATS) range = SHARE_RANGE_FLOATS;
    range = (range + 15) / 16 * 16; /* whole cache lines */
    share(j, name, total, range, fn, ctx);
}

void em_jobs_ranges(em_jobs *j, size_t total, void (*fn)(void *ctx, size_t lo, size_t count),
                    void *ctx) {
    ranges_named(j, "ranges", total, fn, ctx);
}

/* ---- deferred work ---- */

static void deferred_some(void *ctx, size_t lo, size_t count) {
    em_jobs *j = ctx;
    for (size_t i = lo; i < lo + count; i++)
        j->cfg.deferred(j->cfg.ctx, j->flush[i]);
}

/* The deferred work of the workers of `group` (NULL: 0 .. n - 1) that have any, each on its own
 * replica, shared with the engine's free threads (without waiting for the jobs in flight), then
 * accounted in worker order. */
static void flush_deferred(em_jobs *j, const int *group, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        const int w = group ? group[i] : i;
        if (j->deferred[w]) {
            j->deferred[w] = 0;
            j->flush[k++] = w;
        }
    }
    if (k == 0) return;
    share(j, "deferred", (size_t)k, 1, deferred_some, j);
    for (int i = 0; i < k; i++)
        j->cfg.deferred_done(j->cfg.ctx, j->flush[i]);
}

void em_jobs_own_group(em_jobs *j, const int *group, int n) {
    mark_resolve(j);
    for (int i = 0; i < n; i++)
        em_jobs_settle_worker(j, group ? group[i] : i);
    flush_deferred(j, group, n);
}

typedef struct mean_ctx {
    em_jobs *j;
    int k;
    const float *const *xs;
    float *out;
} mean_ctx;

static void mean_part(void *ctx, size_t lo, size_t count) {
    const mean_ctx *m = ctx;
    const float **xs = ss_malloc(sizeof(float *) * (size_t)m->k);
    for (int i = 0; i < m->k; i++)
        xs[i] = m->xs[i] + lo;
    device_mean(m->j->cfg.dev, count, m->k, xs, m->out + lo);
    free(xs);
}

void em_jobs_mean(em_jobs *j, size_t n, int k, const float *const *xs, float *out) {
    mean_ctx m = {.j = j, .k = k, .xs = xs, .out = out};
    ranges_named(j, "mean", n, mean_part, &m);
}

/* dst takes src's parameters and buffers (batch normalization's running statistics). */
static void copy_model(device *dev, model *dst, model *src) {
    device_copy(dev, model_params(dst), model_params(src), model_param_count(src));
    const size_t nb = model_buffer_count(src);
    if (nb) device_copy(dev, model_buffers(dst), model_buffers(src), nb);
}

typedef struct eval_ctx {
    em_jobs *j;
    const dataset *test;
    model *from;     /* the model evaluated in chunks */
    uint8_t *copied; /* (threads) the slot's evaluation model holds `from` */
    double *loss;    /* (chunks) */
    size_t *correct; /* (chunks, or replicas) */
    model *const *replicas;
} eval_ctx;

static void eval_chunk(void *ctx, int c, int slot) {
    const eval_ctx *ec = ctx;
    const size_t chunk = (size_t)ec->j->cfg.max_batch, s0 = (size_t)c * chunk;
    const size_t nb = ec->test->n - s0 < chunk ? ec->test->n - s0 : chunk;
    const size_t d = dataset_features(ec->test);
    if (!ec->copied[slot]) { /* each slot's model, on its own thread: no serial copies */
        copy_model(ec->j->cfg.dev, ec->j->eval[slot], ec->from);
        ec->copied[slot] = 1;
    }
    ec->loss[c] = model_evaluate_sum(ec->j->eval[slot], ec->test->x + s0 * d, ec->test->y + s0, nb,
                                     &ec->correct[c]);
}

/* An evaluation begun (em_jobs_evaluate_start): its chunks' tasks and sums, or the sum of one
 * taken in one piece. */
struct em_jobs_eval {
    int chunked;
    eval_ctx ec;
    par_batch tasks;
    int n_chunks;
    double loss_sum; /* in one piece */
    size_t correct;
};

void em_jobs_evaluate_start(em_jobs *j, model *from, const dataset *test) {
    em_jobs_settle_all(j);
    SS_ASSERT(!j->ev);
    struct em_jobs_eval *ev = ss_calloc(1, sizeof *ev);
    j->ev = ev;
    /* a language model in one piece: its next-token count is rounded once */
    if (test->n == 0 || model_is_language(from)) {
        ev->loss_sum = model_evaluate_sum(from, test->x, test->y, test->n, &ev->correct);
        return;
    }
    if (!j->eval) {
        const double t0 = engine_now_s();
        ev->loss_sum = model_evaluate_sum(from, test->x, test->y, test->n, &ev->correct);
        j->work_s += engine_now_s() - t0;
        return;
    }
    const size_t chunk = (size_t)j->cfg.max_batch;
    ev->chunked = 1;
    ev->n_chunks = (int)((test->n + chunk - 1) / chunk);
    ev->ec = (eval_ctx){.j = j,
                        .test = test,
                        .from = from,
                        .copied = ss_calloc((size_t)engine_threads(j->en), 1),
                        .loss = ss_calloc((size_t)ev->n_chunks, sizeof(double)),
                        .correct = ss_calloc((size_t)ev->n_chunks, sizeof(size_t))};
    ev->tasks = parallel_submit(j, "evaluate", ev->n_chunks, eval_chunk, &ev->ec);
}

double em_jobs_evaluate_finish(em_jobs *j, size_t *correct) {
    struct em_jobs_eval *ev = j->ev;
    SS_ASSERT(ev != NULL);
    double loss_sum = ev->loss_sum;
    size_t right = ev->correct;
    if (ev->chunked) {
        parallel_wait(j, &ev->tasks);
        loss_sum = 0.0; /* in chunk order, as model_evaluate sums */
        right = 0;
        for (int c = 0; c < ev->n_chunks; c++) {
            loss_sum += ev->ec.loss[c];
            right += ev->ec.correct[c];
        }
        free(ev->ec.loss);
        free(ev->ec.correct);
        free(ev->ec.copied);
    }
    free(ev);
    j->ev = NULL;
    if (correct) *correct = right;
    return loss_sum;
}

static void eval_replica(void *ctx, int w, int slot) {
    const eval_ctx *ec = ctx;
    model *m = ec->j->eval[slot];
    copy_model(ec->j->cfg.dev, m, ec->replicas[w]);
    model_evaluate_sum(m, ec->test->x, ec->test->y, ec->test->n, &ec->correct[w]);
}

/* A replica's parameters and buffers on the host, in `into` (grown as needed). */
static size_t replica_bytes_into(device *dev, model *m, float **into, size_t *cap) {
    const size_t np = model_param_count(m), nb = model_buffer_count(m);
    if (*cap < np + nb) {
        free(*into);
        *into = ss_malloc((np + nb) * sizeof(float));
        *cap = np + nb;
    }
    device_download(dev, *into, model_params(m), np);
    if (nb) device_download(dev, *into + np, model_buffers(m), nb);
    return (np + nb) * sizeof(float);
}

static uint64_t hash_bytes(const void *p, size_t bytes) {
    uint64_t h = 14695981039346656037ull; /* FNV-1a over 64-bit words, then the tail */
    const unsigned char *b = p;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 1099511628211ull;
    }
    for (; i < bytes; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* first[w]: the first replica holding the same bits as replica w (w itself if none does), so
 * that equal replicas (all of them after a BSP step) are evaluated once. Equal hashes are
 * confirmed byte for byte. */
static void find_equal_replicas(device *dev, model *const *replicas, int n, int *first) {
    uint64_t *hash = ss_malloc(sizeof(uint64_t) * (size_t)n);
    int *reps = ss_malloc(sizeof(int) * (size_t)n), n_reps = 0;
    float *a = NULL, *b = NULL;
    size_t cap_a = 0, cap_b = 0;
    for (int w = 0; w < n; w++) {
        const size_t bytes = replica_bytes_into(dev, replicas[w], &a, &cap_a);
        hash[w] = hash_bytes(a, bytes);
        first[w] = w;
        for (int r = 0; r < n_reps && first[w] == w; r++) {
            if (hash[reps[r]] != hash[w]) continue;
            replica_bytes_into(dev, replicas[reps[r]], &b, &cap_b);
            if (!memcmp(a, b, bytes)) first[w] = reps[r];
        }
        if (first[w] == w) reps[n_reps++] = w;
    }
    free(a);
    free(b);
    free(reps);
    free(hash);
}

typedef struct reps_ctx {
    eval_ctx *ec;
    const int *reps;
} reps_ctx;

static void eval_rep(void *ctx, int i, int slot) {
    const reps_ctx *rc = ctx;
    eval_replica(rc->ec, rc->reps[i], slot);
}

double em_jobs_accuracy_mean(em_jobs *j, model *const *replicas, int n, model *holder,
                             const dataset *test) {
    SS_ASSERT(!j->ev); /* the slots' evaluation models are the evaluation's until it finishes */
    em_jobs_settle_all(j);
    if (test->n == 0) return 0.0;
    eval_ctx ec = {.j = j,
                   .test = test,
                   .correct = ss_calloc((size_t)n, sizeof(size_t)),
                   .replicas = replicas};
    int *first = ss_malloc(sizeof(int) * (size_t)n), *reps = ss_malloc(sizeof(int) * (size_t)n);
    find_equal_replicas(j->cfg.dev, replicas, n, first);
    int n_reps = 0;
    for (int w = 0; w < n; w++)
        if (first[w] == w) reps[n_reps++] = w;
    if (j->eval) {
        reps_ctx rc = {.ec = &ec, .reps = reps};
        parallel_for(j, "evaluate replica", n_reps, eval_rep, &rc);
    } else {
        const double t0 = engine_now_s();
        for (int i = 0; i < n_reps; i++) {
            copy_model(j->cfg.dev, holder, replicas[reps[i]]);
            model_evaluate_sum(holder, test->x, test->y, test->n, &ec.correct[reps[i]]);
        }
        j->work_s += engine_now_s() - t0;
    }
    double sum = 0;
    for (int w = 0; w < n; w++)
        sum += (double)ec.correct[first[w]] / (double)test->n;
    free(first);
    free(reps);
    free(ec.correct);
    return sum / n;
}
