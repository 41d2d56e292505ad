/* The emulation step source (see emulation.h). Each callback runs inside a worker's (or a
 * server's) SimGrid actor and takes no simulated time itself: the policy charges the time. A
 * step's real computation runs on the compute engine between compute_begin and compute_end
 * (emulation_jobs.h); every callback that touches a replica settles its job first. */
#include "emu/emulation_internal.h"
#include "common/engine.h"
#include "common/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- compute and local update ---- */

static int draw_batch(emulation *e, int w, int batch) {
    if (e->next_batch_size[w] == 0) {
        batch_iter_next(e->iters[w], e->next_batch[w], batch);
        e->next_batch_size[w] = batch;
    }
    return e->next_batch_size[w];
}

sim_layer_kind emulation_layer_kind(const model_layer_cost *l) {
    return l->conv      ? SIM_LAYER_CONV
           : l->matmul  ? SIM_LAYER_MATMUL
           : l->norm    ? SIM_LAYER_NORM
           : l->maxpool ? SIM_LAYER_MAXPOOL
                        : SIM_LAYER_OTHER;
}

/* A step of `samples` samples, layer by layer, for the GPU compute model and overlap. */
static void layers_of(const emulation *e, int samples, sim_layer_cost *out) {
    for (int i = 0; i < e->n_layers; i++) {
        const model_layer_cost *l = &e->layer_sample[i];
        out[i] = (sim_layer_cost){.fwd_flops = l->fwd_flops * samples,
                                  .bwd_flops = l->bwd_flops * samples,
                                  .fwd_bytes = l->fwd_bytes * samples,
                                  .bwd_bytes = l->bwd_bytes * samples,
                                  .param_bytes = l->param_bytes,
                                  .kernels = l->kernels,
                                  .kind = emulation_layer_kind(l),
                                  .gemm_n = l->gemm_n,
                                  .gemm_k = l->gemm_k};
    }
}

sim_layer_cost *emulation_step_layers(const emulation *e, int samples, int *n) {
    sim_layer_cost *out = ss_malloc(sizeof(sim_layer_cost) * (size_t)e->n_layers);
    layers_of(e, samples, out);
    *n = e->n_layers;
    return out;
}

static void fill_layers(emulation *e, int w, int samples, step_cost *cost) {
    sim_layer_cost *out = e->layer_step + (size_t)w * (size_t)e->n_layers;
    layers_of(e, samples, out);
    cost->layers = out;
    cost->n_layers = e->n_layers;
}

/* model_forward_backward_each's hook, passed on to the policy's (step_source.grad_ready). */
typedef struct em_hook {
    const step_source *src;
    const step_cost *cost;
} em_hook;

static void em_grad_ready(void *ctx, int layer) {
    const em_hook *h = ctx;
    h->src->grad_ready(h->src->grad_ready_ctx, layer, h->cost);
}

/* A settled job's bookkeeping, in the order the jobs began (emulation_jobs.h). */
static void em_settled(void *ctx, int w, const em_job_out *o) {
    emulation *e = ctx;
    if (gradient_dump_wants(e->dump, o->step))
        gradient_dump_device(e->dump, e->cfg.dev, model_grads(e->replicas[w]), e->params, o->step,
                             w);
    if (e->cfg.use_ps && e->cfg.clip_norm > 0) /* clipped before it is pushed */
        grad_clip_norm(e->cfg.dev, model_grads(e->replicas[w]), e->params, e->cfg.clip_norm);
    e->samples += o->samples;
    e->last_step[w] = o->step;
    if (!isfinite(o->loss)) {
        if (!e->diverged) e->diverged_step = o->step;
        e->diverged = 1;
        if (!e->src.stop_after && !e->cfg.real) e->src.stop_after = o->step;
    } else {
        e->loss_sum += o->loss;
        e->loss_count++;
    }
}

static void em_compute_begin(void *self, int w, long step, int batch, step_cost *cost) {
    emulation *e = self;
    if (!e->cfg.real && e->cfg.interrupted && e->cfg.interrupted() && !e->src.stop_after)
        e->src.stop_after = step;
    SS_ASSERT(batch >= 1 && batch <= e->cfg.max_batch);
    em_jobs_settle_worker(e->jobs, w); /* its deferred work goes into the new job */
    int own = draw_batch(e, w, batch);
    if (e->cfg.real && e->cfg.max_batch > e->cfg.batch) /* injection: every stream in step */
        for (int j = 0; j < e->cfg.workers; j++)
            if (j != w) {
                draw_batch(e, j, e->cfg.batch);
                e->next_batch_size[j] = 0;
            }
    int extra = e->injected_count[w];
    if (own + extra > e->cfg.max_batch) extra = e->cfg.max_batch - own;
    size_t *idx = em_jobs_indices(e->jobs, w);
    memcpy(idx, e->next_batch[w], sizeof(size_t) * (size_t)own);
    memcpy(idx + own, e->injected[w], sizeof(size_t) * (size_t)extra);
    e->next_batch_size[w] = 0;
    e->injected_count[w] = 0;
    const int total = own + extra;
    cost->flops = e->flops_per_sample * total;
    cost->trace_s = -1;
    fill_layers(e, w, total, cost);
    /* real mode's overlap starts collectives from the backward pass: the job runs now, here */
    em_hook hook = {&e->src, cost};
    em_jobs_submit(e->jobs, w, e->replicas[w], step, total,
                   e->src.grad_ready ? em_grad_ready : NULL, &hook);
}

static void em_compute_end(void *self, int w, step_cost *cost, step_stats *st) {
    emulation *e = self;
    const em_job_out *o = em_jobs_take(e->jobs, w);
    cost->measured_s = o->measured_s + e->opt_s[w];
    e->opt_s[w] = 0.0;
    st->loss = o->loss;
    st->samples = o->samples;
    st->grad_norm = o->grad_norm;
    st->layer_norm_sum = o->layer_norm_sum;
}

static void em_compute(void *self, int w, long step, int batch, step_cost *cost, step_stats *st) {
    em_compute_begin(self, w, step, batch, cost);
    em_compute_end(self, w, cost, st);
}

static void em_settle(void *self, long step) {
    emulation *e = self;
    em_jobs_settle_before(e->jobs, step);
}

static float lr_at(const emulation *e, long step) {
    return (float)lr_schedule_at(&e->cfg.schedule, step - 1);
}

/* With measure_time, an optimizer step of worker w is timed (its device work finished) into
 * e->opt_s[w]: the measured step, like the compute model's and a measured profile's, includes
 * the update (and its clipping), though not the copies of averages, which a real all-reduce
 * leaves in place. Not in real mode, whose clock is the wall's: there the update takes its own
 * time between the steps. */
static int opt_timed(const emulation *e) {
    return e->cfg.measure_time && !e->cfg.real;
}

static double opt_begin(const emulation *e) {
    return opt_timed(e) ? engine_now_s() : 0.0;
}

static void opt_end(emulation *e, int w, double t0) {
    if (!opt_timed(e)) return;
    device_sync(e->cfg.dev);
    e->opt_s[w] += engine_now_s() - t0;
}

/* The optimizer step of worker w at rate lr: any thread (its replica and momentum only). */
static void local_step(emulation *e, int w, float lr) {
    model *m = e->replicas[w];
    const double t0 = opt_begin(e);
    if (e->cfg.clip_norm > 0) /* after any gradient aggregation, as with DDP */
        grad_clip_norm(e->cfg.dev, model_grads(m), e->params, e->cfg.clip_norm);
    sgd_step(e->opts[w], model_params(m), model_grads(m), lr, (float)e->cfg.momentum,
             (float)e->cfg.weight_decay);
    opt_end(e, w, t0);
}

static float *member_vector(emulation *e, int w, aggregate_what what);

/* Worker w's copy of the mean statistics (batch norm's running ones; NULL: none). */
static void copy_stats(emulation *e, int w, const float *buf_mean) {
    if (buf_mean) device_copy(e->cfg.dev, model_buffers(e->replicas[w]), buf_mean, e->buffers);
}

/* Worker w's copy of a mean (and of its statistics) into its own vector: any thread. */
static void copy_mean(emulation *e, int w, aggregate_what what, const float *mean,
                      const float *buf_mean) {
    copy_stats(e, w, buf_mean);
    device_copy(e->cfg.dev, member_vector(e, w, what), mean, e->params);
}

/* em_jobs' deferred work of worker w: its ops in order, on whichever thread runs them. A copy
 * of the mean gradient followed by the optimizer step (BSP's, and every synchronized step of
 * gradient averaging) is one pass: the step reads the mean where it is, the same values as from
 * the copy, and the replica's own gradient, which its next backward pass overwrites, is left as
 * it is. Clipping scales the gradient in place, so with it the copy stays. */
static void em_deferred(void *ctx, int w) {
    emulation *e = ctx;
    for (int i = 0; i < e->n_ops[w]; i++) {
        const em_op *op = &e->ops[w][i];
        if (op->kind == EM_OP_COPY && op->what == AGGREGATE_GRADS && i + 1 < e->n_ops[w] &&
            e->ops[w][i + 1].kind == EM_OP_STEP && !(e->cfg.clip_norm > 0)) {
            copy_stats(e, w, op->buf_mean);
            const double t0 = opt_begin(e);
            sgd_step(e->opts[w], model_params(e->replicas[w]), op->mean, e->ops[w][++i].lr,
                     (float)e->cfg.momentum, (float)e->cfg.weight_decay);
            opt_end(e, w, t0);
        } else if (op->kind == EM_OP_COPY) {
            copy_mean(e, w, op->what, op->mean, op->buf_mean);
        } else {
            local_step(e, w, op->lr);
        }
    }
}

/* On the simulation's thread, once worker w's deferred ops have run: their slots are free. */
static void em_deferred_done(void *ctx, int w) {
    emulation *e = ctx;
    for (int i = 0; i < e->n_ops[w]; i++)
        if (e->ops[w][i].kind == EM_OP_COPY) e->slots[e->ops[w][i].slot].copies--;
    e->n_ops[w] = 0;
}

/* Queues op for worker w's next job (its job in flight, if any, settled first). */
static void defer_op(emulation *e, int w, const em_op *op) {
    if (e->n_ops[w] == EM_MAX_OPS) em_jobs_own(e->jobs, w); /* full: they run now */
    e->ops[w][e->n_ops[w]++] = *op;
    em_jobs_defer(e->jobs, w);
}

static void em_apply_local(void *self, int w, long step) {
    emulation *e = self;
    if (e->defer) {
        defer_op(e, w, &(em_op){.kind = EM_OP_STEP, .lr = lr_at(e, step)});
        return;
    }
    em_jobs_own(e->jobs, w);
    local_step(e, w, lr_at(e, step));
}

/* ---- aggregation ---- */

static agg_slot *find_slot(emulation *e, long seq, int key) {
    for (int i = 0; i < e->n_slots; i++)
        if (e->slots[i].seq == seq && e->slots[i].key == key) return &e->slots[i];
    return NULL;
}

static agg_slot *new_slot(emulation *e, long seq, int key, int callers) {
    agg_slot *s = NULL;
    for (int i = 0; i < e->n_slots && !s; i++)
        if (e->slots[i].seq < 0 && e->slots[i].copies == 0) s = &e->slots[i];
    if (!s) {
        e->slots = realloc(e->slots, sizeof(agg_slot) * (size_t)(e->n_slots + 1));
        SS_ASSERT(e->slots);
        s = &e->slots[e->n_slots++];
        s->mean = device_alloc(e->cfg.dev, e->params);
        s->buf_mean = e->buffers ? device_alloc(e->cfg.dev, e->buffers) : NULL;
        s->copies = 0;
    }
    s->seq = seq;
    s->key = key;
    s->pending = callers;
    return s;
}

static float *member_vector(emulation *e, int w, aggregate_what what) {
    model *m = e->replicas[w];
    return what == AGGREGATE_PARAMS ? model_params(m) : model_grads(m);
}

static void em_aggregate(void *self, int w, long seq, const int *group, int n, int callers,
                         aggregate_what what, const uint8_t *mask, int keep_local) {
    emulation *e = self;
    if (e->cfg.real) { /* the exchange left the members' sum in this worker's vector */
        (void)seq, (void)callers, (void)mask, (void)keep_local;
        device_scale(e->cfg.dev, e->params, 1.0f / (float)n, member_vector(e, w, what));
        return;
    }
    const int key = group ? group[0] : -1;
    agg_slot *s = find_slot(e, seq, key);
    if (!s) {
        s = new_slot(e, seq, key, callers);
        em_jobs_own_group(e->jobs, group, n); /* their deferred work across the engine */
        for (int j = 0; j < n; j++)
            e->gather[j] = member_vector(e, group ? group[j] : j, what);
        em_jobs_mean(e->jobs, e->params, n, e->gather, s->mean);
        if (e->cfg.bn_average && e->buffers) { /* whatever is exchanged, never dropped */
            for (int j = 0; j < n; j++)
                e->gather[j] = model_buffers(e->replicas[group ? group[j] : j]);
            device_mean(e->cfg.dev, e->buffers, n, e->gather, s->buf_mean);
        }
    }
    const float *buf_mean = e->cfg.bn_average && e->buffers ? s->buf_mean : NULL;
    if (!mask && e->defer) { /* the copy into w's replica runs with its next job */
        s->copies++;
        defer_op(e, w,
                 &(em_op){.kind = EM_OP_COPY,
                          .what = what,
                          .mean = s->mean,
                          .buf_mean = buf_mean,
                          .slot = (int)(s - e->slots)});
    } else if (!mask) {
        em_jobs_own(e->jobs, w);
        copy_mean(e, w, what, s->mean, buf_mean);
    } else {
        em_jobs_own(e->jobs, w);
        if (buf_mean) device_copy(e->cfg.dev, model_buffers(e->replicas[w]), buf_mean, e->buffers);
        float *mine = member_vector(e, w, what);
        if (!keep_local) device_scale(e->cfg.dev, e->params, 0.0f, mine);
        device_masked_copy(e->cfg.dev, e->params, mask, s->mean, mine);
    }
    if (--s->pending == 0) s->seq = -1;
}

/* ---- parameter server ---- */

static void shard_range(const emulation *e, int shard, int n_shards, size_t *lo, size_t *count) {
    size_t base = e->params / (size_t)n_shards, rem = e->params % (size_t)n_shards;
    *lo = (size_t)shard * base + ((size_t)shard < rem ? (size_t)shard : rem);
    *count = base + ((size_t)shard < rem);
}

/* A server's update of its slice, or a pull of it, in ranges (em_jobs_ranges): element-wise, so
 * the same bits however the slice is split, and still in the simulation's order. */
typedef struct ps_part {
    emulation *e;
    sgd_state *opt;   /* the update's (NULL: a pull) */
    float *dst;       /* the slice's first element: the server's, or the replica's */
    const float *src; /* the pushed gradient's, or the server's */
    float lr;
} ps_part;

static void ps_part_run(void *ctx, size_t lo, size_t count) {
    const ps_part *p = ctx;
    const emulation *e = p->e;
    if (p->opt)
        sgd_step_part(p->opt, lo, count, p->dst, p->src, p->lr, (float)e->cfg.momentum,
                      (float)e->cfg.weight_decay);
    else
        device_copy(e->cfg.dev, p->dst + lo, p->src + lo, count);
}

static void em_ps_apply(void *self, int w, long step, int shard, int n_shards) {
    emulation *e = self;
    SS_ASSERT(e->ps_params && n_shards == e->cfg.ps_servers);
    size_t lo, count;
    shard_range(e, shard, n_shards, &lo, &count);
    em_jobs_own(e->jobs, w);
    if (e->ps_pushed && shard == 0) /* the statistics travel with the push (server 0 keeps them) */
        device_copy(e->cfg.dev, e->ps_pushed[w], model_buffers(e->replicas[w]), e->buffers);
    ps_part p = {.e = e,
                 .opt = e->ps_opts[shard],
                 .dst = e->ps_params + lo,
                 .src = model_grads(e->replicas[w]) + lo,
                 .lr = lr_at(e, step) * (float)e->cfg.ps_lr_scale};
    em_jobs_ranges(e->jobs, count, ps_part_run, &p);
}

static void em_ps_pull(void *self, int w, int shard, int n_shards) {
    emulation *e = self;
    size_t lo, count;
    shard_range(e, shard, n_shards, &lo, &count);
    em_jobs_own(e->jobs, w);
    ps_part p = {.e = e, .dst = model_params(e->replicas[w]) + lo, .src = e->ps_params + lo};
    em_jobs_ranges(e->jobs, count, ps_part_run, &p);
    if (e->ps_pushed && shard == 0)
        device_mean(e->cfg.dev, e->buffers, e->cfg.workers, (const float *const *)e->ps_pushed,
                    model_buffers(e->replicas[w]));
}

/* ---- data injection ---- */

static void em_inject(void *self, int from, int to, int count) {
    emulation *e = self;
    /* The sender shares the first `count` samples of the batch it computes next; it is drawn
     * now if it was not yet (the draw is the same whoever asks first). */
    int own = draw_batch(e, from, e->cfg.batch);
    if (count > own) count = own;
    int room = e->cfg.max_batch - e->injected_count[to];
    if (count > room) count = room;
    memcpy(e->injected[to] + e->injected_count[to], e->next_batch[from],
           sizeof(size_t) * (size_t)count);
    e->injected_count[to] += count;
}

/* DLCP's magnitude priority: chunks ordered by the sum over the group of the mean |value| of
 * the exchanged vectors in the chunk, largest first (ties: lower index first). */
static void em_chunk_order(void *self, aggregate_what what, const int *group, int n,
                           size_t chunk_floats, int n_chunks, int *order) {
    emulation *e = self;
    float *host = ss_malloc(sizeof(float) * e->params);
    double *mass = ss_calloc((size_t)n_chunks, sizeof(double));
    em_jobs_own_group(e->jobs, group, n);
    for (int j = 0; j < n; j++) {
        device_download(e->cfg.dev, host, member_vector(e, group ? group[j] : j, what), e->params);
        for (size_t i = 0; i < e->params; i++)
            mass[i / chunk_floats] += fabsf(host[i]);
    }
    for (int c = 0; c < n_chunks; c++) { /* a mean: the last chunk may be shorter */
        size_t lo = (size_t)c * chunk_floats;
        size_t hi = lo + chunk_floats < e->params ? lo + chunk_floats : e->params;
        mass[c] /= (double)(hi - lo);
    }
    for (int c = 0; c < n_chunks; c++)
        order[c] = c;
    for (int i = 1; i < n_chunks; i++) /* insertion sort, stable */
        for (int k = i; k > 0 && mass[order[k - 1]] < mass[order[k]]; k--) {
            int t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    free(mass);
    free(host);
}

static int em_forced_decision(void *self, long step) {
    (void)self;
    (void)step;
    return -1;
}

/* Real mode: the vector the exchange sends from and receives into, in place. On a GPU it is
 * managed memory (device_share_with_host), which MPI may touch once the kernels that wrote it
 * are done; it moves to the host in one transfer (em_buffer_part: the part MPI touches), and back
 * (em_buffer_done) when MPI is done. */
static float *exchanged(emulation *e, int w, int what) {
    if (what != STEP_BUFFER_PS) em_jobs_own(e->jobs, w);
    return what == STEP_BUFFER_PS ? e->ps_params : member_vector(e, w, (aggregate_what)what);
}

static float *em_buffer(void *self, int w, int what) {
    emulation *e = self;
    float *v = exchanged(e, w, what);
    device_place(e->cfg.dev, v, e->params, 1);
    return v;
}

static float *em_buffer_part(void *self, int w, int what, size_t offset, size_t count) {
    emulation *e = self;
    float *v = exchanged(e, w, what);
    SS_ASSERT(offset + count <= e->params);
    device_place(e->cfg.dev, v + offset, count, 1);
    return v;
}

static void em_buffer_done(void *self, int w, int what) {
    emulation *e = self;
    float *v = exchanged(e, w, what);
    if (!v) return;
    device_place(e->cfg.dev, v, e->params, 0);
    device_sync(e->cfg.dev);
}

/* In the simulation the source holds every replica and averages them itself (aggregate); in
 * real mode the exchange moves the worker's own vectors, which buffer() hands it. */
#define EMULATION_OPS                                                                              \
    .name = "emulation", .compute = em_compute, .compute_begin = em_compute_begin,                 \
    .compute_end = em_compute_end, .settle = em_settle, .apply_local = em_apply_local,             \
    .aggregate = em_aggregate, .ps_apply = em_ps_apply, .ps_pull = em_ps_pull,                     \
    .inject = em_inject, .step_done = em_step_done, .chunk_order = em_chunk_order,                 \
    .forced_decision = em_forced_decision
static const step_source_ops emulation_ops = {EMULATION_OPS};
static const step_source_ops emulation_real_ops = {EMULATION_OPS, .buffer = em_buffer,
                                                   .buffer_part = em_buffer_part,
                                                   .buffer_done = em_buffer_done};
#undef EMULATION_OPS

/* ---- life cycle ---- */

/* Measured compute: one forward and backward pass on a zero batch before the first timed step,
 * so that step 1 does not carry the device's start-up (a GPU's lazily loaded kernels, cuBLAS's
 * first calls: 0.12 to 0.15 s on an H100, against 2 to 6 ms for a later step of 4 ranks). The
 * gradient it leaves is overwritten by step 1's. */
static void warm_up(emulation *e, size_t features) {
    float *x;
    uint8_t *y;
    em_jobs_staging(e->jobs, &x, &y);
    memset(x, 0, sizeof(float) * features * (size_t)e->cfg.batch);
    memset(y, 0, (size_t)e->cfg.batch);
    model_forward_backward(e->replicas[0], x, y, e->cfg.batch);
    device_sync(e->cfg.dev);
}

int emulation_create(const emulation_config *cfg, emulation **out) {
    *out = NULL;
    SS_ASSERT(cfg->workers >= 1 && cfg->max_batch >= 1 && cfg->eval_every >= 1);
    emulation *e = ss_calloc(1, sizeof *e);
    e->cfg = *cfg;
    const int n = cfg->workers;
    int rc = SS_OK;
    e->replicas = ss_calloc((size_t)n, sizeof(model *));
    e->opts = ss_calloc((size_t)n, sizeof(sgd_state *));
    e->iters = ss_calloc((size_t)n, sizeof(batch_iter *));
    e->next_batch = ss_calloc((size_t)n, sizeof(size_t *));
    e->next_batch_size = ss_calloc((size_t)n, sizeof(int));
    e->injected = ss_calloc((size_t)n, sizeof(size_t *));
    e->injected_count = ss_calloc((size_t)n, sizeof(int));
    e->gather = ss_calloc((size_t)n, sizeof(float *));
    e->staged = ss_calloc((size_t)n, 1);
    e->mark_group = ss_calloc((size_t)n, sizeof(int));
    e->ops = ss_calloc((size_t)n, sizeof *e->ops);
    e->n_ops = ss_calloc((size_t)n, sizeof(int));
    e->opt_s = ss_calloc((size_t)n, sizeof(double));
    e->defer = !cfg->real;
    e->done_step = ss_calloc((size_t)n, sizeof(long));
    e->last_step = ss_calloc((size_t)n, sizeof(long));
    e->last.test_accuracy = -1;
    e->next_eval = cfg->eval_every < cfg->last_step ? cfg->eval_every : cfg->last_step;

    for (int w = 0; w < n && rc == SS_OK; w++) {
        /* Same seed for every replica: all workers start from one initialization. */
        rc = model_create(cfg->dev, cfg->spec, cfg->seed, cfg->max_batch, &e->replicas[w]);
        if (rc != SS_OK) break;
        model_set_stream(e->replicas[w], (uint64_t)w); /* each worker its dropout masks */
        e->opts[w] = sgd_create(cfg->dev, model_param_count(e->replicas[w]));
        sgd_set_nesterov(e->opts[w], cfg->nesterov);
        e->next_batch[w] = ss_malloc(sizeof(size_t) * (size_t)cfg->max_batch);
        e->injected[w] = ss_malloc(sizeof(size_t) * (size_t)cfg->max_batch);
    }
    if (rc == SS_OK)
        rc = model_create(cfg->dev, cfg->spec, cfg->seed, cfg->max_batch, &e->eval_model);
    if (rc == SS_OK)
        rc = partition_create(cfg->train, n, cfg->partition, cfg->partition_param, cfg->seed,
                              &e->part);
    if (rc == SS_OK) rc = gradient_dump_create(cfg->dump_gradients, cfg->out_dir, &e->dump);
    if (rc == SS_OK && cfg->augment) rc = augment_init(&e->aug, cfg->train, 4, cfg->seed);
    if (rc != SS_OK) {
        emulation_destroy(e);
        return rc;
    }
    for (int w = 0; w < n; w++)
        e->iters[w] = batch_iter_create(e->part, w, cfg->seed);
    model *m0 = e->replicas[0];
    e->params = model_param_count(m0);
    e->buffers = model_buffer_count(m0);
    e->flops_per_sample = model_forward_flops_per_sample(m0) + model_backward_flops_per_sample(m0);
    e->n_layers = model_cost_layer_count(m0);
    e->layer_sample = ss_malloc(sizeof(model_layer_cost) * (size_t)e->n_layers);
    for (int i = 0; i < e->n_layers; i++)
        model_cost_layer_at(m0, i, &e->layer_sample[i]);
    e->layer_step = ss_calloc((size_t)n * (size_t)e->n_layers, sizeof(sim_layer_cost));
    const size_t features = dataset_features(cfg->train);
    const em_jobs_config jc = {.threads = cfg->threads,
                               .workers = n,
                               .max_batch = cfg->max_batch,
                               .train = cfg->train,
                               .dev = cfg->dev,
                               .spec = cfg->spec,
                               .seed = cfg->seed,
                               .measure_time = cfg->measure_time,
                               .layer_norms = cfg->layer_norms,
                               .aug = cfg->augment ? &e->aug : NULL,
                               .settled = em_settled,
                               .deferred = em_deferred,
                               .deferred_done = em_deferred_done,
                               .ctx = e,
                               .trace = cfg->trace};
    if ((rc = em_jobs_create(&jc, &e->jobs)) != SS_OK) {
        emulation_destroy(e);
        return rc;
    }
    if (e->cfg.ps_lr_scale <= 0) e->cfg.ps_lr_scale = 1.0;
    if (cfg->use_ps) {
        SS_ASSERT(cfg->ps_servers >= 1);
        e->ps_params = device_alloc(cfg->dev, e->params);
        device_copy(cfg->dev, e->ps_params, model_params(m0), e->params);
        e->ps_opts = ss_calloc((size_t)cfg->ps_servers, sizeof(sgd_state *));
        for (int k = 0; k < cfg->ps_servers; k++) {
            size_t lo, count;
            shard_range(e, k, cfg->ps_servers, &lo, &count);
            e->ps_opts[k] = sgd_create(cfg->dev, count);
            sgd_set_nesterov(e->ps_opts[k], cfg->nesterov);
        }
        if (cfg->bn_average && e->buffers) {
            e->ps_pushed = ss_calloc((size_t)n, sizeof(float *));
            for (int w = 0; w < n; w++) {
                e->ps_pushed[w] = device_alloc(cfg->dev, e->buffers);
                device_copy(cfg->dev, e->ps_pushed[w], model_buffers(m0), e->buffers);
            }
        }
    }
    e->src.ops = cfg->real ? &emulation_real_ops : &emulation_ops;
    e->src.self = e;
    e->src.param_count = e->params;
    e->src.param_bytes = model_param_bytes(m0);
    e->src.state_bytes = cfg->bn_average ? sizeof(float) * (double)e->buffers : 0.0;
    e->src.sample_bytes = (double)features * sizeof(float) + 1.0;
    if (cfg->measure_time) warm_up(e, features);
    *out = e;
    return SS_OK;
}

void emulation_destroy(emulation *e) {
    if (!e) return;
    const int n = e->cfg.workers;
    em_jobs_destroy(e->jobs); /* settles what is in flight (a run that stopped on an error) */
    gradient_dump_destroy(e->dump);
    free(e->layer_sample);
    free(e->layer_step);
    for (int w = 0; w < n; w++) {
        if (e->iters[w]) batch_iter_destroy(e->iters[w]);
        if (e->opts[w]) sgd_destroy(e->opts[w]);
        if (e->replicas[w]) model_destroy(e->replicas[w]);
        free(e->next_batch[w]);
        free(e->injected[w]);
    }
    for (int i = 0; i < e->n_slots; i++) {
        device_free(e->cfg.dev, e->slots[i].mean);
        if (e->slots[i].buf_mean) device_free(e->cfg.dev, e->slots[i].buf_mean);
    }
    if (e->ps_pushed)
        for (int w = 0; w < n; w++)
            device_free(e->cfg.dev, e->ps_pushed[w]);
    free(e->ps_pushed);
    augment_free(&e->aug);
    if (e->ps_opts)
        for (int k = 0; k < e->cfg.ps_servers; k++)
            sgd_destroy(e->ps_opts[k]);
    if (e->ps_params) device_free(e->cfg.dev, e->ps_params);
    if (e->stage) device_free(e->cfg.dev, e->stage);
    if (e->eval_model) model_destroy(e->eval_model);
    if (e->part) partition_destroy(e->part);
    free(e->slots);
    free(e->ps_opts);
    free(e->replicas);
    free(e->opts);
    free(e->iters);
    free(e->next_batch);
    free(e->next_batch_size);
    free(e->injected);
    free(e->injected_count);
    free(e->gather);
    free(e->staged);
    free(e->mark_group);
    free(e->ops);
    free(e->n_ops);
    free(e->opt_s);
    free(e->done_step);
    free(e->last_step);
    free(e->snaps);
    free(e->snap_params);
    free(e);
}

step_source *emulation_source(emulation *e) {
    return &e->src;
}

int emulation_diverged(const emulation *e, long *step) {
    if (step) *step = e->diverged_step;
    return e->diverged;
}

model *emulation_replica(emulation *e, int w) {
    em_jobs_settle_all(e->jobs);
    return e->replicas[w];
}

int emulation_threads(const emulation *e) {
    return em_jobs_threads(e->jobs);
}

double emulation_samples(const emulation *e) {
    return e->samples;
}

double emulation_work_seconds(const emulation *e) {
    return em_jobs_work_seconds(e->jobs);
}

int emulation_trace_write(const emulation *e, const char *path) {
    return em_jobs_trace_write(e->jobs, path);
}

int emulation_ps_download(emulation *e, float *host) {
    em_jobs_settle_all(e->jobs);
    if (!e->ps_params) return 0;
    device_download(e->cfg.dev, host, e->ps_params, e->params);
    return 1;
}
