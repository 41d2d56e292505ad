/* The workers' step computations in flight (emulation_jobs.h). */
#include "emu/emulation_jobs.h"
#include "common/engine.h"
#include "common/status.h"
#include "emu/partition.h"
#include "kernels/device.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct em_job {
    em_jobs *owner;
    int worker;
    model *m;
    engine_task task;
    int in_flight; /* submitted and not settled */
    em_job_out out;
} em_job;

struct em_jobs {
    em_jobs_config cfg;
    engine *en;
    em_job *jobs;     /* (N) one per worker: a worker has at most one step in flight */
    size_t **indices; /* (N, max_batch) */
    float **x;        /* (threads, max_batch * features) staging, one per engine slot */
    uint8_t **y;      /* (threads, max_batch) */
    int *fifo;        /* (N) workers in flight, in the order their jobs began (a ring) */
    int head, count;
};

static double wall_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One worker's step: the batch, the passes, the norms. Touches only its replica and its slot. */
static void job_run_hooked(em_job *job, int slot, void (*grad_ready)(void *ctx, int layer),
                           void *hook_ctx) {
    em_jobs *j = job->owner;
    device *dev = j->cfg.dev;
    em_job_out *o = &job->out;
    dataset_gather(j->cfg.train, j->indices[job->worker], o->samples, j->x[slot], j->y[slot]);
    const double t0 = j->cfg.measure_time ? wall_now_s() : 0.0;
    o->loss = model_forward_backward_each(job->m, j->x[slot], j->y[slot], o->samples, grad_ready,
                                          hook_ctx);
    if (j->cfg.measure_time) {
        device_sync(dev);
        o->measured_s = wall_now_s() - t0;
    }
    const size_t params = model_param_count(job->m);
    o->grad_norm = device_nrm2(dev, params, model_grads(job->m));
    o->layer_norm_sum = 0;
    if (j->cfg.layer_norms)
        for (int i = 0; i < model_view_count(job->m); i++) {
            const model_view *v = model_view_at(job->m, i);
            o->layer_norm_sum += device_nrm2(dev, v->count, model_grads(job->m) + v->offset);
        }
}

static void job_run(void *arg, int slot) {
    job_run_hooked(arg, slot, NULL, NULL);
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
    const int n = cfg->workers, t = engine_threads(j->en);
    const size_t features = dataset_features(cfg->train);
    j->jobs = ss_calloc((size_t)n, sizeof *j->jobs);
    j->indices = ss_calloc((size_t)n, sizeof *j->indices);
    j->fifo = ss_calloc((size_t)n, sizeof *j->fifo);
    for (int w = 0; w < n; w++) {
        j->jobs[w] = (em_job){.owner = j, .worker = w};
        j->jobs[w].task = (engine_task){.run = job_run, .arg = &j->jobs[w]};
        j->indices[w] = ss_malloc(sizeof(size_t) * (size_t)cfg->max_batch);
    }
    j->x = ss_calloc((size_t)t, sizeof *j->x);
    j->y = ss_calloc((size_t)t, sizeof *j->y);
    for (int s = 0; s < t; s++) {
        j->x[s] = ss_malloc(sizeof(float) * features * (size_t)cfg->max_batch);
        j->y[s] = ss_malloc((size_t)cfg->max_batch);
    }
    *out = j;
    return SS_OK;
}

void em_jobs_destroy(em_jobs *j) {
    if (!j) return;
    em_jobs_settle_all(j);
    const int t = engine_threads(j->en);
    engine_destroy(j->en);
    for (int w = 0; w < j->cfg.workers; w++)
        free(j->indices[w]);
    for (int s = 0; s < t; s++) {
        free(j->x[s]);
        free(j->y[s]);
    }
    free(j->x);
    free(j->y);
    free(j->indices);
    free(j->jobs);
    free(j->fifo);
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

/* Settles the oldest job in flight: waits for it, then the source's bookkeeping. */
static void settle_oldest(em_jobs *j) {
    SS_ASSERT(j->count > 0);
    em_job *job = &j->jobs[j->fifo[j->head]];
    engine_wait(j->en, &job->task);
    job->in_flight = 0;
    j->head = (j->head + 1) % j->cfg.workers;
    j->count--;
    j->cfg.settled(j->cfg.ctx, job->worker, &job->out);
}

void em_jobs_submit(em_jobs *j, int w, model *m, long step, int samples,
                    void (*grad_ready)(void *ctx, int layer), void *hook_ctx) {
    em_job *job = &j->jobs[w];
    SS_ASSERT(!job->in_flight && samples >= 1 && samples <= j->cfg.max_batch);
    job->m = m;
    job->out = (em_job_out){.step = step, .samples = samples};
    if (grad_ready) em_jobs_settle_all(j); /* slot 0 is free, and the order kept */
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

void em_jobs_own(em_jobs *j, int w) {
    while (j->jobs[w].in_flight)
        settle_oldest(j);
}

const em_job_out *em_jobs_take(em_jobs *j, int w) {
    em_jobs_own(j, w);
    return &j->jobs[w].out;
}

void em_jobs_settle_before(em_jobs *j, long step) {
    int last = -1; /* position in the FIFO of the last job of an earlier step */
    for (int i = 0; i < j->count; i++)
        if (j->jobs[j->fifo[(j->head + i) % j->cfg.workers]].out.step < step) last = i;
    for (int i = 0; i <= last; i++)
        settle_oldest(j);
}

void em_jobs_settle_all(em_jobs *j) {
    while (j->count > 0)
        settle_oldest(j);
}
