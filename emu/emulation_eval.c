/* The emulation's evaluations (emulation.h): the consensus of the replicas (or the parameter
 * server's model) on the test set at the evaluation steps, the final one, the mean of the
 * workers' own accuracies, and real mode's snapshots and their later evaluation. */
#include "emu/emulation_internal.h"
#include "common/outputs.h"
#include "common/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The evaluation of the model in eval_model, begun: the row's fields other than the test set's
 * as they are now (the training loss since the last row, the epoch, the counters), the test
 * set's chunks queued on the engine (em_jobs_evaluate_start). The workers' jobs submitted before
 * evaluation_end run beside the chunks, which read eval_model only: the worker whose step_done
 * made the evaluation due submits its next step at once, and ran it alone after the whole
 * evaluation before. evaluation_end comes at the next step_done, the next evaluation, or the
 * end of the run. */
static void evaluation_begin(emulation *e, long step, double now_s, const step_counters *counters) {
    SS_ASSERT(!e->eval_pending);
    emulation_eval *ev = &e->pending_eval;
    ev->step = step;
    ev->epoch = e->samples / (double)e->cfg.train->n;
    ev->sim_time_s = now_s;
    ev->train_loss = e->loss_count ? e->loss_sum / (double)e->loss_count : NAN;
    ev->sync_steps = counters ? counters->sync_steps : 0;
    ev->bytes_sent = counters ? counters->bytes_sent : 0;
    e->loss_sum = 0;
    e->loss_count = 0;
    em_jobs_evaluate_start(e->jobs, e->eval_model, e->cfg.test);
    e->eval_pending = 1;
}

/* The evaluation begun, finished: its test loss and accuracy, the row out (on_eval). One that
 * waits for its jobs (evaluate) is begun first. */
static void evaluation_end(emulation *e) {
    em_jobs_resolve(e->jobs);
    if (!e->eval_pending) return;
    const double t0 = outputs_wall_s();
    emulation_eval *ev = &e->pending_eval;
    size_t correct = 0;
    const size_t n_test = e->cfg.test->n;
    const double loss_sum = em_jobs_evaluate_finish(e->jobs, &correct);
    ev->test_loss = n_test ? loss_sum / (double)n_test : 0.0; /* as model_evaluate's mean */
    ev->test_accuracy = n_test ? (double)correct / (double)n_test : 0.0;
    e->eval_pending = 0;
    e->last = *ev;
    if (e->cfg.on_eval) e->cfg.on_eval(e->cfg.eval_ctx, ev);
    e->eval_wall_s += outputs_wall_s() - t0;
}

static void evaluate_model(emulation *e, long step, double now_s, const step_counters *counters) {
    evaluation_begin(e, step, now_s, counters);
    evaluation_end(e);
}

/* eval_model's buffers (batch normalization's running statistics, which every replica keeps
 * for itself and no policy exchanges) take the mean of the replicas'. */
static void buffers_of_replicas(emulation *e) {
    const size_t nb = model_buffer_count(e->eval_model);
    if (!nb) return;
    for (int j = 0; j < e->cfg.workers; j++)
        e->gather[j] = model_buffers(e->replicas[j]);
    device_mean(e->cfg.dev, nb, e->cfg.workers, e->gather, model_buffers(e->eval_model));
}

/* eval_model takes the mean of the replicas' parameters (and buffers). */
static void consensus_of_replicas(emulation *e) {
    for (int j = 0; j < e->cfg.workers; j++)
        e->gather[j] = model_params(e->replicas[j]);
    em_jobs_mean(e->jobs, e->params, e->cfg.workers, e->gather, model_params(e->eval_model));
    buffers_of_replicas(e);
}

/* The marked evaluation (evaluate), its jobs settled: the mean of the replicas' parameters, and
 * of their statistics as they were when it came due, begun. */
static void evaluate_marked(void *ctx) {
    emulation *e = ctx;
    SS_ASSERT(e->eval_marked);
    e->eval_marked = 0;
    const double t0 = outputs_wall_s();
    for (int j = 0; j < e->cfg.workers; j++)
        e->gather[j] = model_params(e->replicas[j]);
    em_jobs_mean(e->jobs, e->params, e->cfg.workers, e->gather, model_params(e->eval_model));
    if (e->buffers) {
        for (int j = 0; j < e->cfg.workers; j++)
            e->gather[j] =
                e->staged[j] ? e->stage + (size_t)j * e->buffers : model_buffers(e->replicas[j]);
        device_mean(e->cfg.dev, e->buffers, e->cfg.workers, e->gather,
                    model_buffers(e->eval_model));
    }
    evaluation_begin(e, e->mark_step, e->mark_now_s, e->mark_counted ? &e->mark_counters : NULL);
    e->eval_wall_s += outputs_wall_s() - t0;
}

/* The consensus of the replicas when jobs are in flight: rather than wait for them here, the
 * evaluation waits for them beside the next job begun (the step of the worker whose step_done
 * made it due, submitted next at the same simulated instant), and is begun once they are
 * settled (em_jobs_mark). It sees what evaluate would: the workers in flight after their jobs,
 * the others as they are now (their deferred work run; their statistics kept, which their next
 * job's forward pass changes; their parameters, which nothing changes before the mark). On 16
 * threads an evaluation round ran 15 steps and then that worker's step alone. */
static int evaluate_later(emulation *e, long step, double now_s, const step_counters *counters) {
    int in_flight = 0, idle = 0;
    for (int j = 0; j < e->cfg.workers; j++) {
        e->staged[j] = !em_jobs_in_flight(e->jobs, j);
        in_flight += !e->staged[j];
    }
    if (!in_flight) return 0;
    for (int j = 0; j < e->cfg.workers; j++)
        if (e->staged[j]) e->mark_group[idle++] = j;
    em_jobs_own_group(e->jobs, e->mark_group, idle); /* their deferred work across the engine */
    if (e->buffers) {
        if (!e->stage) e->stage = device_alloc(e->cfg.dev, (size_t)e->cfg.workers * e->buffers);
        for (int j = 0; j < e->cfg.workers; j++)
            if (e->staged[j])
                device_copy(e->cfg.dev, e->stage + (size_t)j * e->buffers,
                            model_buffers(e->replicas[j]), e->buffers);
    }
    e->mark_step = step;
    e->mark_now_s = now_s;
    e->mark_counted = counters != NULL;
    if (counters) e->mark_counters = *counters;
    e->eval_marked = 1;
    em_jobs_mark(e->jobs, evaluate_marked, e);
    return 1;
}

/* `counters`: the policy's, as they are now (the run's final ones after the simulation). The
 * evaluation is left begun (or marked, evaluate_later): evaluation_end finishes it. */
static void evaluate(emulation *e, long step, double now_s, const step_counters *counters) {
    evaluation_end(e); /* one at a time */
    if (!(e->cfg.evaluate_ps && e->ps_params) && evaluate_later(e, step, now_s, counters)) return;
    em_jobs_settle_all(e->jobs); /* the replicas' buffers, and every loss begun before */
    const double t0 = outputs_wall_s();
    if (e->cfg.evaluate_ps && e->ps_params) {
        device_copy(e->cfg.dev, model_params(e->eval_model), e->ps_params, e->params);
        if (e->ps_pushed) /* the server's statistics: the mean of the last pushed */
            device_mean(e->cfg.dev, e->buffers, e->cfg.workers, (const float *const *)e->ps_pushed,
                        model_buffers(e->eval_model));
        else
            buffers_of_replicas(e); /* the server holds parameters only */
    } else {
        consensus_of_replicas(e);
    }
    evaluation_begin(e, step, now_s, counters);
    e->eval_wall_s += outputs_wall_s() - t0;
}

static long next_eval_after(const emulation *e, long eval) {
    long next = eval + e->cfg.eval_every;
    if (eval < e->cfg.last_step && next > e->cfg.last_step) next = e->cfg.last_step;
    return next;
}

/* Real mode: worker w keeps its parameters and its counters at the evaluation step. */
static void snapshot(emulation *e, int w, long step, double now_s, const step_counters *c) {
    em_jobs_settle_all(e->jobs);
    if (e->n_snaps == e->cap_snaps) {
        e->cap_snaps = e->cap_snaps ? 2 * e->cap_snaps : 16;
        e->snaps = realloc(e->snaps, e->cap_snaps * sizeof *e->snaps);
        e->snap_params = realloc(e->snap_params, e->cap_snaps * e->params * sizeof(float));
        SS_ASSERT(e->snaps && e->snap_params);
    }
    e->snaps[e->n_snaps] = (emulation_snapshot){.step = step,
                                                .now_s = now_s,
                                                .sync_steps = c ? c->sync_steps : 0,
                                                .bytes_sent = c ? c->bytes_sent : 0,
                                                .loss_sum = e->loss_sum,
                                                .loss_count = (double)e->loss_count,
                                                .samples = e->samples};
    device_download(e->cfg.dev, e->snap_params + e->n_snaps * e->params,
                    model_params(e->replicas[w]), e->params);
    e->n_snaps++;
    e->loss_sum = 0;
    e->loss_count = 0;
}

void em_step_done(void *self, int w, long step, double now_s) {
    emulation *e = self;
    evaluation_end(e);
    e->done_step[w] = step;
    if (e->cfg.real) {
        if (e->next_eval > e->cfg.last_step || step < e->next_eval) return;
        snapshot(e, w, e->next_eval, now_s, e->src.counters);
        while (e->next_eval <= e->cfg.last_step && e->next_eval <= step)
            e->next_eval = next_eval_after(e, e->next_eval);
        return;
    }
    for (;;) {
        long min = e->done_step[0];
        for (int j = 1; j < e->cfg.workers; j++)
            if (e->done_step[j] < min) min = e->done_step[j];
        if (e->next_eval > e->cfg.last_step || min < e->next_eval) break;
        evaluate(e, e->next_eval, now_s, e->src.counters);
        e->next_eval = next_eval_after(e, e->next_eval);
    }
}

void emulation_finish_evaluation(emulation *e) {
    evaluation_end(e);
}

int emulation_evaluation_open(const emulation *e) {
    return e->eval_pending || e->eval_marked;
}

void emulation_evaluate_final(emulation *e, double now_s, const step_counters *final) {
    evaluation_end(e);
    em_jobs_settle_all(e->jobs);
    long min = e->done_step[0];
    for (int j = 1; j < e->cfg.workers; j++)
        if (e->done_step[j] < min) min = e->done_step[j];
    if (e->last.test_accuracy >= 0 && e->last.step >= min) return;
    evaluate(e, min, now_s, final);
    evaluation_end(e);
}

double emulation_worker_accuracy_mean(emulation *e) {
    evaluation_end(e);
    return em_jobs_accuracy_mean(e->jobs, e->replicas, e->cfg.workers, e->eval_model, e->cfg.test);
}

double emulation_eval_seconds(emulation *e) {
    evaluation_end(e);
    return e->eval_wall_s;
}

const emulation_eval *emulation_last_eval(emulation *e) {
    evaluation_end(e);
    return &e->last;
}

void emulation_snapshot_stop(emulation *e, int w, long step, double now_s, const step_counters *c) {
    if (e->n_snaps > 0 && e->snaps[e->n_snaps - 1].step == step) return;
    snapshot(e, w, step, now_s, c);
}

size_t emulation_snapshots(const emulation *e, const emulation_snapshot **snaps,
                           const float **params) {
    *snaps = e->snaps;
    *params = e->snap_params;
    return e->n_snaps;
}

void emulation_evaluate_given(emulation *e, const float *const *params, const float *ps, long step,
                              double now_s, const step_counters *counters, double train_loss,
                              double samples) {
    em_jobs_settle_all(e->jobs);
    for (int w = 0; w < e->cfg.workers; w++) {
        device_upload(e->cfg.dev, model_params(e->replicas[w]), params[w], e->params);
        e->done_step[w] = step;
    }
    if (ps)
        device_upload(e->cfg.dev, model_params(e->eval_model), ps, e->params);
    else
        consensus_of_replicas(e);
    e->samples = samples;
    e->loss_sum = isfinite(train_loss) ? train_loss : 0;
    e->loss_count = isfinite(train_loss) ? 1 : 0;
    evaluate_model(e, step, now_s, counters);
}
