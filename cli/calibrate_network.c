/* `syncsim calibrate network` (see calibrate_network.h). */
#include "cli/calibrate_network.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#include "cli/bench_network.h"
#include "cli/options.h"
#include "cli/validate_network.h"
#include "common/afile.h"
#include "common/number.h"
#include "common/status.h"

/* ---- the model ---- */

static double param_of(double u, const calib_param *p) {
    double a = log(p->lo), b = log(p->hi);
    return exp(a + (b - a) * 0.5 * (1 + tanh(u)));
}

static double u_of(double x, const calib_param *p) {
    double a = log(p->lo), b = log(p->hi), s = (log(x) - a) / (b - a);
    if (s < 0.02) s = 0.02;
    if (s > 0.98) s = 0.98;
    return atanh(2 * s - 1);
}

static void set_params(platform_gen_spec *s, const double *x) {
    s->bandwidth_Bps = x[CALIB_BW];
    s->latency_s = x[CALIB_LAT];
    s->intra_bandwidth_Bps = x[CALIB_INTRA_BW];
    s->intra_latency_s = x[CALIB_INTRA_LAT];
}

static int total_sizes(const calib_fit *f) {
    int n = 0;
    for (int l = 0; l < f->n_logs; l++)
        n += f->logs[l].n;
    return n;
}

/* Relative errors of every size at parameter values x (pred_us/ran when not NULL). */
static int evaluate(calib_fit *f, const double *x, double *res, double *pred_us, char (*ran)[32]) {
    int k = 0, n = total_sizes(f);
    /* the solver asks again for the point it stands on (its Jacobian's base): the last one kept */
    if (!pred_us && f->last_res && !memcmp(x, f->last_x, sizeof f->last_x)) {
        memcpy(res, f->last_res, sizeof *res * (size_t)n);
        return SS_OK;
    }
    f->evaluations++;
    for (int l = 0; l < f->n_logs; l++) {
        const calib_log *g = &f->logs[l];
        platform_gen_spec s = f->spec[l];
        set_params(&s, x);
        platform_temp path;
        int st = platform_temp_generate(&s, &path);
        if (st) return st;
        for (int i = 0; i < g->n; i++, k++) {
            double sim_s, wall_s;
            char r[BENCH_RAN_LEN] = "";
            st = bench_network_allreduce_channels(path.path, g->ranks, g->size_bytes[i], f->model,
                                                  f->algo, f->protocol, f->channels, &sim_s,
                                                  &wall_s, r);
            if (st) {
                platform_temp_close(&path);
                return st;
            }
            double p = 1e6 * sim_s;
            res[k] = (p - g->time_us[i]) / g->time_us[i];
            if (pred_us) pred_us[k] = p;
            if (ran) snprintf(ran[k], 32, "%s", r[0] ? r : "-");
        }
        platform_temp_close(&path);
    }
    if (!f->last_res) f->last_res = ss_malloc(sizeof *f->last_res * (size_t)n);
    memcpy(f->last_res, res, sizeof *res * (size_t)n);
    memcpy(f->last_x, x, sizeof f->last_x);
    return SS_OK;
}

int calib_fit_init(calib_fit *f, const run_config *cfg, const calib_log *logs, int n_logs) {
    memset(f, 0, sizeof *f);
    f->cfg = cfg;
    f->logs = logs;
    f->n_logs = n_logs;
    f->max_iter = 40;
    if (n_logs < 1 || n_logs > CALIB_MAX_LOGS)
        return ss_error_set(SS_EUSAGE, "calibrate network: give 1 to %d logs (%d given)",
                            CALIB_MAX_LOGS, n_logs);
    int st;
    if ((st = sim_network_model_parse("--network-model", cfg->network_model, &f->model))) return st;
    sim_allreduce_algo algo;
    if ((st = sim_allreduce_algo_parse("--collective", cfg->collective, &algo))) return st;
    f->algo = (int)algo;
    if ((st = sim_nccl_protocol_parse("--protocol", cfg->protocol, &f->protocol))) return st;
    f->channels = cfg->channels > 0 ? cfg->channels : 1;
    if ((st = coll_check_channels(f->channels, algo, 0, cfg->collective))) return st;
    if (f->protocol != SIM_PROTOCOL_AUTO && !coll_takes_protocol(algo, f->protocol))
        return ss_error_set(SS_EUSAGE,
                            "--protocol %s applies to --collective auto, hier, hier-coarse, "
                            "dbtree, ring or ring-coarse (NCCL's algorithms), not %s",
                            cfg->protocol, cfg->collective);
    if (!strcasecmp(cfg->network_model, "ns-3"))
        return ss_error_set(SS_EUSAGE, "calibrate network: --network-model ns-3 takes no node "
                                       "platform (platforms/README.md)");
    int multi_node = 0, multi_gpu = 0, single_node_multi_gpu = 0, G = logs[0].gpus_per_node;
    for (int l = 0; l < n_logs; l++) {
        if (logs[l].gpus_per_node != G)
            return ss_error_set(SS_EINPUT,
                                "calibrate network: %s has %d GPUs per node, %s %d: the logs "
                                "must come from one kind of node",
                                logs[l].path, logs[l].gpus_per_node, logs[0].path, G);
        if (cfg->gpus_per_node && cfg->gpus_per_node != G)
            return ss_error_set(SS_EUSAGE,
                                "option --gpus-per-node %d: %s has %d GPUs per node (leave "
                                "--gpus-per-node out: the logs give it)",
                                cfg->gpus_per_node, logs[l].path, G);
        run_config c = *cfg;
        c.nodes = logs[l].nodes;
        c.gpus_per_node = G;
        if ((st = platform_spec_from_config(&c, logs[l].ranks, 0, &f->spec[l]))) return st;
        multi_node |= logs[l].nodes > 1;
        multi_gpu |= G > 1;
        single_node_multi_gpu |= logs[l].nodes == 1 && G > 1;
    }
    const platform_gen_spec *s = &f->spec[0];
    const double start[CALIB_NPARAM] = {s->bandwidth_Bps, s->latency_s, s->intra_bandwidth_Bps,
                                        s->intra_latency_s};
    static const char *const keys[CALIB_NPARAM] = {"bandwidth", "latency", "intra-bandwidth",
                                                   "intra-latency"};
    const int free_[CALIB_NPARAM] = {multi_node, multi_node, multi_gpu, single_node_multi_gpu};
    const char *lone = "no single-node log (across nodes the NIC latency stands for it)";
    const char *why[CALIB_NPARAM] = {"no log spans two nodes", "no log spans two nodes",
                                     "one GPU per node", lone};
    for (int i = 0; i < CALIB_NPARAM; i++) {
        calib_param *p = &f->p[i];
        p->key = keys[i];
        p->start = p->value = start[i];
        if (i == CALIB_BW || i == CALIB_INTRA_BW) {
            p->lo = start[i] / 20;
            p->hi = start[i] * 4;
        } else {
            p->lo = 10e-9;
            p->hi = fmax(i == CALIB_LAT ? 100e-6 : 20e-6, 10 * start[i]);
            if (p->start < p->lo) p->start = p->value = p->lo;
        }
        p->free = free_[i];
        p->note = p->free ? "" : why[i];
    }
    f->pred_us = ss_malloc(sizeof *f->pred_us * (size_t)total_sizes(f));
    f->ran = ss_malloc(sizeof *f->ran * (size_t)total_sizes(f));
    return SS_OK;
}

void calib_fit_free(calib_fit *f) {
    free(f->pred_us);
    free(f->ran);
    free(f->last_res);
    f->last_res = NULL;
    f->pred_us = NULL;
    f->ran = NULL;
}

/* ---- the fit ---- */

typedef struct fit_ctx {
    calib_fit *f;
    int idx[CALIB_NPARAM]; /* free parameter j is f->p[idx[j]] */
    int n_free;
    int status; /* of the last failed simulation */
} fit_ctx;

static void values_of(const fit_ctx *c, const gsl_vector *u, double *x) {
    for (int i = 0; i < CALIB_NPARAM; i++)
        x[i] = c->f->p[i].value;
    for (int j = 0; j < c->n_free; j++)
        x[c->idx[j]] = param_of(gsl_vector_get(u, (size_t)j), &c->f->p[c->idx[j]]);
}

/* The solver's residual of one size from its relative error e = (predicted - measured) /
 * measured: s = log(predicted / measured), symmetric (2 x too slow and 2 x too fast weigh the
 * same), under Cauchy's robust loss of scale c: the residual is sign(s) c sqrt(log(1 + s^2 / c^2)),
 * whose square is Cauchy's rho(s) = c^2 log(1 + s^2/c^2). Below c it is least squares on s; far
 * above, a size weighs as the log of its error, so the steps of a real log that no description
 * of links reproduces (sizes 3 to 10 x slower than their neighbours) do not pull the link
 * parameters off the sizes they do describe. */
static double robust_residual(double e) {
    /* a prediction of 0 (a size the simulation prices at nothing) stays finite */
    const double s = log1p(fmax(e, -1 + 1e-12)), c = CALIB_LOSS_SCALE;
    return copysign(c * sqrt(log1p(s * s / (c * c))), s);
}

static void objective(const calib_fit *f, double *r) {
    for (int k = 0, n = total_sizes(f); k < n; k++)
        r[k] = robust_residual(r[k]);
}

static int residual_f(const gsl_vector *u, void *params, gsl_vector *r) {
    fit_ctx *c = params;
    double x[CALIB_NPARAM];
    values_of(c, u, x);
    int st = evaluate(c->f, x, r->data, NULL, NULL);
    if (st) {
        c->status = st;
        return GSL_EBADFUNC;
    }
    objective(c->f, r->data);
    return GSL_SUCCESS;
}

#define CALIB_FD_STEP 0.05 /* in the tanh coordinate: about 2.5 % of a bound's log range */

static int residual_df(const gsl_vector *u, void *params, gsl_matrix *J) {
    size_t n = J->size1;
    gsl_vector *r0 = gsl_vector_alloc(n), *r1 = gsl_vector_alloc(n), *v = gsl_vector_alloc(u->size);
    int st = residual_f(u, params, r0);
    for (size_t j = 0; st == GSL_SUCCESS && j < u->size; j++) {
        gsl_vector_memcpy(v, u);
        double h = gsl_vector_get(u, j) > 0 ? -CALIB_FD_STEP : CALIB_FD_STEP;
        gsl_vector_set(v, j, gsl_vector_get(u, j) + h);
        st = residual_f(v, params, r1);
        for (size_t i = 0; st == GSL_SUCCESS && i < n; i++)
            gsl_matrix_set(J, i, j, (gsl_vector_get(r1, i) - gsl_vector_get(r0, i)) / h);
    }
    gsl_vector_free(r0);
    gsl_vector_free(r1);
    gsl_vector_free(v);
    return st;
}

/* Which free parameters move a prediction: a factor of 2 must change one by 0.5 %. */
static int check_identifiable(calib_fit *f, double *r0, double *r1) {
    double x[CALIB_NPARAM];
    int n = total_sizes(f), st;
    for (int i = 0; i < CALIB_NPARAM; i++)
        x[i] = f->p[i].value;
    if ((st = evaluate(f, x, r0, NULL, NULL))) return st;
    for (int i = 0; i < CALIB_NPARAM; i++) {
        if (!f->p[i].free) continue;
        double save = x[i];
        x[i] = save * 2 <= f->p[i].hi ? save * 2 : save / 2;
        if ((st = evaluate(f, x, r1, NULL, NULL))) return st;
        x[i] = save;
        double most = 0;
        for (int k = 0; k < n; k++)
            most = fmax(most, fabs((1 + r1[k]) / (1 + r0[k]) - 1));
        if (most < 0.005) {
            f->p[i].free = 0;
            f->p[i].note = "not identifiable from these logs (x2 moves no prediction 0.5 %)";
        }
    }
    return SS_OK;
}

static void print_residuals(const calib_fit *f, const double *res, const char *column, FILE *out) {
    int k = 0;
    double *el = ss_malloc(sizeof *el * (size_t)total_sizes(f));
    double *es = ss_malloc(sizeof *es * (size_t)total_sizes(f));
    for (int l = 0; l < f->n_logs; l++) {
        const calib_log *g = &f->logs[l];
        int nl = 0, ns = 0;
        fprintf(out, "\n## %s: %d node%s x %d GPUs (%d ranks)\n", g->path, g->nodes,
                g->nodes == 1 ? "" : "s", g->gpus_per_node, g->ranks);
        fprintf(out, "%15s %14s %14s %10s  %s\n", "size_bytes", "measured_us", column, "error_%",
                "ran");
        for (int i = 0; i < g->n; i++, k++) {
            fprintf(out, "%15.0f %14.2f %14.2f %10.1f  %s\n", g->size_bytes[i], g->time_us[i],
                    f->pred_us[k], 100 * res[k], f->ran[k]);
            if (g->size_bytes[i] >= VALIDATE_LARGE_BYTES)
                el[nl++] = res[k];
            else
                es[ns++] = res[k];
        }
        fprintf(out, "median |error|: >= 1 MiB ");
        if (nl)
            fprintf(out, "%.1f %%", 100 * validate_median_abs(el, nl));
        else
            fprintf(out, "-");
        fprintf(out, ", < 1 MiB ");
        if (ns)
            fprintf(out, "%.1f %%\n", 100 * validate_median_abs(es, ns));
        else
            fprintf(out, "-\n");
    }
    free(el);
    free(es);
}

/* 4 significant digits (of the bandwidth in bits, as written): what the config holds. */
static double rounded(int i, double v) {
    char buf[64];
    double k = i == CALIB_BW || i == CALIB_INTRA_BW ? 8 : 1;
    snprintf(buf, sizeof buf, "%.4g", k * v);
    return strtod(buf, NULL) / k;
}

static void format_value(int i, double v, char *buf, size_t n) {
    if (i == CALIB_BW || i == CALIB_INTRA_BW)
        platform_format_bandwidth(v, buf, n);
    else
        platform_format_latency(v, buf, n);
}

static void print_params(const calib_fit *f, FILE *out) {
    fprintf(out, "\n%-16s %14s %14s %14s %14s  %s\n", "parameter", "start", "fitted", "low", "high",
            "");
    for (int i = 0; i < CALIB_NPARAM; i++) {
        char a[48], b[48], lo[48], hi[48];
        const calib_param *p = &f->p[i];
        format_value(i, p->start, a, sizeof a);
        format_value(i, p->value, b, sizeof b);
        format_value(i, p->lo, lo, sizeof lo);
        format_value(i, p->hi, hi, sizeof hi);
        fprintf(out, "%-16s %14s %14s %14s %14s  %s\n", p->key, a, p->free ? b : "-", lo, hi,
                p->free ? "fitted" : p->note);
    }
}

typedef struct progress_ctx {
    fit_ctx *c;
    FILE *out;
} progress_ctx;

static void on_iteration(const size_t iter, void *params, const gsl_multifit_nlinear_workspace *w) {
    progress_ctx *p = params;
    double x[CALIB_NPARAM], chi = gsl_blas_dnrm2(gsl_multifit_nlinear_residual(w));
    values_of(p->c, gsl_multifit_nlinear_position(w), x);
    fprintf(p->out, "# iteration %2zu: robust rms error %.2f %%", iter,
            100 * chi / sqrt((double)total_sizes(p->c->f)));
    for (int j = 0; j < p->c->n_free; j++) {
        char buf[48];
        format_value(p->c->idx[j], rounded(p->c->idx[j], x[p->c->idx[j]]), buf, sizeof buf);
        fprintf(p->out, ", %s %s", p->c->f->p[p->c->idx[j]].key, buf);
    }
    fprintf(p->out, "\n");
    fflush(p->out);
}

/* The solver's iterations until they converge: an iteration that moves no free parameter by
 * 0.05 % (below the 4 digits the configuration keeps), two in a row that lower the residuals'
 * norm by less than 0.01 % (a direction the logs hardly see), GSL's own small-step or
 * small-gradient test, or no step left that lowers the residuals (GSL_ENOPROG: a minimum to the
 * simulation's resolution). GSL_EMAXITER after max_iter iterations without any. */
static int solve(fit_ctx *c, gsl_multifit_nlinear_workspace *w, FILE *out) {
    progress_ctx pc = {c, out};
    double prev[CALIB_NPARAM], now[CALIB_NPARAM];
    double norm = gsl_blas_dnrm2(gsl_multifit_nlinear_residual(w));
    int flat = 0;
    on_iteration(0, &pc, w);
    for (int it = 0; it < c->f->max_iter; it++) {
        values_of(c, gsl_multifit_nlinear_position(w), prev);
        int gs = gsl_multifit_nlinear_iterate(w);
        if (gs == GSL_ENOPROG) return GSL_SUCCESS;
        if (gs != GSL_SUCCESS) return gs;
        on_iteration((size_t)it + 1, &pc, w);
        values_of(c, gsl_multifit_nlinear_position(w), now);
        double moved = 0, n2 = gsl_blas_dnrm2(gsl_multifit_nlinear_residual(w));
        for (int j = 0; j < c->n_free; j++)
            moved = fmax(moved, fabs(now[c->idx[j]] / prev[c->idx[j]] - 1));
        flat = norm - n2 < 1e-4 * norm ? flat + 1 : 0;
        norm = n2;
        int info = 0;
        if (moved < 5e-4 || flat >= 2 ||
            gsl_multifit_nlinear_test(1e-6, 1e-8, 0, &info, w) == GSL_SUCCESS)
            return GSL_SUCCESS;
    }
    return GSL_EMAXITER;
}

static const char *gsl_reason(int status) {
    switch (status) {
    case GSL_EMAXITER:
        return "the iteration limit was reached";
    case GSL_ENOPROG:
        return "no step reduced the residuals any more";
    default:
        return gsl_strerror(status);
    }
}

static double sum_sq(const double *r, int n) {
    double s = 0;
    for (int k = 0; k < n; k++)
        s += r[k] * r[k];
    return s;
}

/* A coarse bounded search before the solver: the bandwidths on a grid of 3 points each across
 * their bounds (in log scale), latencies at their starts; the best point (or the start) is where
 * the solver begins. The algorithms auto picks change with the bandwidths, so the residuals
 * jump, and a solver started far off can stop in a valley of the wrong algorithm. */
static int presearch(calib_fit *f, double *start, double *r, FILE *out) {
    static const double grid[] = {-1.2, 0, 1.2};
    const int ng = (int)(sizeof grid / sizeof grid[0]), n = total_sizes(f);
    double x[CALIB_NPARAM], best;
    for (int i = 0; i < CALIB_NPARAM; i++)
        x[i] = start[i] = f->p[i].value;
    int st = evaluate(f, x, r, NULL, NULL);
    if (st) return st;
    objective(f, r);
    best = sum_sq(r, n);
    const int bw = f->p[CALIB_BW].free, ibw = f->p[CALIB_INTRA_BW].free;
    if (!bw && !ibw) return SS_OK;
    for (int a = 0; a < (bw ? ng : 1); a++) {
        for (int b = 0; b < (ibw ? ng : 1); b++) {
            if (bw) x[CALIB_BW] = param_of(grid[a], &f->p[CALIB_BW]);
            if (ibw) x[CALIB_INTRA_BW] = param_of(grid[b], &f->p[CALIB_INTRA_BW]);
            if ((st = evaluate(f, x, r, NULL, NULL))) return st;
            objective(f, r);
            double s = sum_sq(r, n);
            if (s < best) {
                best = s;
                memcpy(start, x, sizeof x);
            }
        }
    }
    char a[48], b[48];
    format_value(CALIB_BW, rounded(CALIB_BW, start[CALIB_BW]), a, sizeof a);
    format_value(CALIB_INTRA_BW, rounded(CALIB_INTRA_BW, start[CALIB_INTRA_BW]), b, sizeof b);
    fprintf(out,
            "# grid over the bandwidths: best robust rms error %.2f %% at bandwidth %s, "
            "intra-bandwidth %s\n",
            100 * sqrt(best / n), a, b);
    fflush(out);
    return SS_OK;
}

int calib_fit_run(calib_fit *f, FILE *out) {
    int n = total_sizes(f), st;
    double *r0 = ss_malloc(sizeof *r0 * (size_t)n), *r1 = ss_malloc(sizeof *r1 * (size_t)n);
    if ((st = check_identifiable(f, r0, r1))) goto done;
    fit_ctx c = {.f = f};
    for (int i = 0; i < CALIB_NPARAM; i++)
        if (f->p[i].free) c.idx[c.n_free++] = i;
    fprintf(out,
            "# calibrate network: %d logs, %d sizes, %d free parameters; robust least squares "
            "on log(predicted / measured), Cauchy's loss of scale %g %% (robust rms error: the "
            "root mean square of its residuals)\n",
            f->n_logs, n, c.n_free, 100 * CALIB_LOSS_SCALE);
    fflush(out);
    if (c.n_free > 0 && n < c.n_free) {
        st = ss_error_set(SS_EINPUT, "calibrate network: %d sizes cannot fit %d parameters", n,
                          c.n_free);
        goto done;
    }
    double begin[CALIB_NPARAM];
    if (c.n_free > 0 && (st = presearch(f, begin, r0, out))) goto done;
    if (c.n_free > 0) {
        gsl_error_handler_t *old = gsl_set_error_handler_off();
        gsl_multifit_nlinear_fdf fdf = {.f = residual_f,
                                        .df = residual_df,
                                        .fvv = NULL,
                                        .n = (size_t)n,
                                        .p = (size_t)c.n_free,
                                        .params = &c};
        gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
        gsl_multifit_nlinear_workspace *w = gsl_multifit_nlinear_alloc(
            gsl_multifit_nlinear_trust, &fp, (size_t)n, (size_t)c.n_free);
        gsl_vector *u = gsl_vector_alloc((size_t)c.n_free);
        for (int j = 0; j < c.n_free; j++)
            gsl_vector_set(u, (size_t)j, u_of(begin[c.idx[j]], &f->p[c.idx[j]]));
        int gs = gsl_multifit_nlinear_init(u, &fdf, w);
        if (gs == GSL_SUCCESS) gs = solve(&c, w, out);
        f->iterations = (int)gsl_multifit_nlinear_niter(w);
        double x[CALIB_NPARAM];
        values_of(&c, gsl_multifit_nlinear_position(w), x);
        for (int j = 0; j < c.n_free; j++)
            f->p[c.idx[j]].value = rounded(c.idx[j], x[c.idx[j]]);
        gsl_vector_free(u);
        gsl_multifit_nlinear_free(w);
        gsl_set_error_handler(old);
        if (c.status) {
            st = c.status;
            goto done;
        }
        if (gs != GSL_SUCCESS) {
            st = ss_error_set(SS_EINPUT,
                              "calibrate network: the fit did not converge in %d iterations (%s); "
                              "nothing written. Check that the logs come from one cluster and "
                              "that --nics-per-node, --fabric and --intra describe it",
                              f->iterations, gsl_reason(gs));
            goto done;
        }
    }
    double x[CALIB_NPARAM];
    for (int i = 0; i < CALIB_NPARAM; i++)
        x[i] = f->p[i].value;
    if ((st = evaluate(f, x, r0, f->pred_us, f->ran))) goto done;
    print_residuals(f, r0, "fitted_us", out);
    print_params(f, out);
    fprintf(out, "# %d iterations, %d evaluations of every size\n", f->iterations, f->evaluations);
done:
    free(r0);
    free(r1);
    return st;
}

int calib_check_logs(const calib_log *fitted, const calib_log *logs, int n_logs) {
    for (int l = 0; l < n_logs; l++)
        if (logs[l].gpus_per_node != fitted->gpus_per_node)
            return ss_error_set(SS_EINPUT,
                                "calibrate network: --check %s has %d GPUs per node, the fitted "
                                "%s %d: the logs must come from one kind of node",
                                logs[l].path, logs[l].gpus_per_node, fitted->path,
                                fitted->gpus_per_node);
    return SS_OK;
}

int calib_fit_check(const calib_fit *f, const calib_log *logs, int n_logs, FILE *out) {
    int st = calib_check_logs(&f->logs[0], logs, n_logs);
    if (st) return st;
    calib_fit c;
    st = calib_fit_init(&c, f->cfg, logs, n_logs);
    double *res = NULL;
    if (st == SS_OK) {
        double x[CALIB_NPARAM];
        for (int i = 0; i < CALIB_NPARAM; i++)
            x[i] = f->p[i].value;
        res = ss_malloc(sizeof *res * (size_t)total_sizes(&c));
        st = evaluate(&c, x, res, c.pred_us, c.ran);
    }
    if (st == SS_OK) {
        fprintf(out, "\n# held out (--check): predicted with the fitted values, not fitted on\n");
        print_residuals(&c, res, "predicted_us", out);
    }
    free(res);
    calib_fit_free(&c);
    return st;
}

/* ---- the config ---- */

int calib_fit_write_config(const calib_fit *f, const char *path) {
    const run_config *cfg = f->cfg;
    afile a;
    int st = afile_open(&a, path);
    if (st) return st;
    FILE *o = a.fp;
    fprintf(o, "; syncsim calibrate network: the cluster of");
    for (int l = 0; l < f->n_logs; l++)
        fprintf(o, " %s (%dx%d)", f->logs[l].path, f->logs[l].nodes, f->logs[l].gpus_per_node);
    fprintf(o,
            "\n; fitted by robust least squares (Cauchy's loss of scale %g %%) on\n"
            "; log(predicted / measured) of every size,\n"
            "; --network-model %s, --collective %s, --protocol %s, --channels %d (give them\n"
            "; again where they are not the defaults). Give --nodes N (and --workers) to\n"
            "; predict N nodes: syncsim bench network --config %s --nodes N\n",
            100 * CALIB_LOSS_SCALE, cfg->network_model, cfg->collective, cfg->protocol, f->channels,
            path);
    char buf[64];
    fprintf(o, "gpus-per-node = %d\n", f->logs[0].gpus_per_node);
    fprintf(o, "nics-per-node = %d\n", cfg->nics_per_node);
    fprintf(o, "fabric = %s\n", cfg->fabric);
    fprintf(o, "intra = %s\n", cfg->intra);
    fprintf(o, "topology = %s\n", cfg->topology);
    if (cfg->pcie_switch) fprintf(o, "pcie-switch = %d\n", cfg->pcie_switch);
    if (cfg->pcie_switch) fprintf(o, "p2p = %s\n", cfg->p2p);
    for (int i = 0; i < CALIB_NPARAM; i++) {
        format_value(i, f->p[i].value, buf, sizeof buf);
        if (!f->p[i].free) fprintf(o, "; %s kept at its start: %s\n", f->p[i].key, f->p[i].note);
        fprintf(o, "%s = %s\n", f->p[i].key, buf);
    }
    return afile_commit(&a);
}

/* ---- the command ---- */

static const char calib_usage[] = "syncsim calibrate network LOG[@NxG]... [options]";

static void print_help(FILE *out) {
    options_print_help(CMD_BENCH_NETWORK, calib_usage, out);
    fprintf(out,
            "\nFits the generated description of the cluster (per-NIC --bandwidth and --latency,\n"
            "--intra-bandwidth, --intra-latency; the other generator options as given) to its\n"
            "nccl-tests all_reduce_perf logs, one or more node counts, by robust least squares\n"
            "(Cauchy's loss of scale 10 %%) on log(predicted / measured) of syncsim's simulated\n"
            "all-reduce times, so that sizes far off every description (steps in the log) do\n"
            "not pull the fit; prints the residuals per log and size and writes\n"
            "OUT/cluster.ini, which platform, bench network, train, replay and compare take\n"
            "with --config (add --nodes N for N nodes). LOG@NxG gives N nodes of G GPUs for a\n"
            "log without its '# Rank' lines. --check LOG[@NxG] (once per log) leaves a log of\n"
            "the same cluster out of the fit and prints its residuals and medians as predicted\n"
            "with the fitted values: fit on the small node counts, check on the large ones.\n");
}

/* Options that the logs decide, refused. */
static int refuse_given(const run_config *cfg) {
    static const char *const decided[] = {"platform", "workers", "sizes", "smpi"};
    for (size_t i = 0; i < sizeof decided / sizeof decided[0]; i++)
        if (options_was_set(cfg, decided[i]))
            return ss_error_set(SS_EUSAGE,
                                "option --%s: calibrate network takes the ranks, nodes and sizes "
                                "from the logs and fits a generated platform",
                                decided[i]);
    return SS_OK;
}

int cmd_calibrate_main(int argc, char **argv) {
    if (argc < 1 || strcmp(argv[0], "network")) {
        if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
            print_help(stdout);
            return 0;
        }
        fprintf(stderr, "syncsim: calibrate needs a target: network%s%s%s (usage: %s)\n",
                argc >= 1 ? " (not '" : "", argc >= 1 ? argv[0] : "", argc >= 1 ? "')" : "",
                calib_usage);
        return 2;
    }
    char **opts = ss_malloc(sizeof *opts * (size_t)(argc + 2));
    const char **names = ss_malloc(sizeof *names * (size_t)argc);
    const char **checks = ss_malloc(sizeof *checks * (size_t)argc);
    int n_opts = 0, n_logs = 0, n_checks = 0, rc = SS_OK;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check") || !strncmp(argv[i], "--check=", 8)) {
            if (argv[i][7] == '=')
                checks[n_checks++] = argv[i] + 8;
            else if (i + 1 < argc)
                checks[n_checks++] = argv[++i];
            else
                rc = ss_error_set(SS_EUSAGE, "option --check: give a log (--check LOG[@NxG])");
        } else if (argv[i][0] == '-' && argv[i][1]) {
            opts[n_opts++] = argv[i];
            if (options_takes_value(CMD_BENCH_NETWORK, argv[i]) && i + 1 < argc)
                opts[n_opts++] = argv[++i];
        } else {
            names[n_logs++] = argv[i];
        }
    }
    run_config cfg;
    calib_log *logs = NULL, *held = NULL;
    calib_fit f = {0};
    if (rc != SS_OK) goto done;
    options_name_command("calibrate network");
    for (int i = 0; i < n_opts; i++)
        if (!strcmp(opts[i], "--nodes") || !strncmp(opts[i], "--nodes=", 8)) {
            fprintf(stderr,
                    "syncsim: option --nodes: calibrate network takes the nodes of each log from "
                    "its Rank lines (or LOG@NxG)\n");
            free(opts);
            free(names);
            free(checks);
            return 2;
        }
    /* the node options are checked as for a node platform; each log sets its own count */
    opts[n_opts++] = "--nodes";
    opts[n_opts++] = "1";
    rc = options_parse(CMD_BENCH_NETWORK, n_opts, opts, &cfg);
    if (rc == SS_OK && n_checks > CALIB_MAX_LOGS)
        rc = ss_error_set(SS_EUSAGE, "calibrate network: at most %d --check logs (%d given)",
                          CALIB_MAX_LOGS, n_checks);
    if (rc == SS_OK && cfg.help) {
        print_help(stdout);
        goto done;
    }
    if (rc == SS_OK) rc = refuse_given(&cfg);
    if (rc == SS_OK && n_logs == 0)
        rc = ss_error_set(SS_EUSAGE, "calibrate network: no log given (usage: %s)", calib_usage);
    if (rc == SS_OK && n_logs > CALIB_MAX_LOGS)
        rc = ss_error_set(SS_EUSAGE, "calibrate network: at most %d logs (%d given)",
                          CALIB_MAX_LOGS, n_logs);
    if (rc == SS_OK) logs = ss_malloc(sizeof *logs * (size_t)n_logs);
    for (int l = 0; rc == SS_OK && l < n_logs; l++)
        rc = calib_log_parse(names[l], &logs[l]);
    if (rc == SS_OK && n_checks) held = ss_malloc(sizeof *held * (size_t)n_checks);
    for (int l = 0; rc == SS_OK && l < n_checks; l++)
        rc = calib_log_parse(checks[l], &held[l]);
    if (rc == SS_OK) rc = calib_check_logs(&logs[0], held, n_checks);
    if (rc == SS_OK) rc = calib_fit_init(&f, &cfg, logs, n_logs);
    if (rc == SS_OK) rc = calib_fit_run(&f, stdout);
    if (rc == SS_OK && n_checks) rc = calib_fit_check(&f, held, n_checks, stdout);
    if (rc == SS_OK) {
        char path[RUN_CONFIG_TEXT + 16];
        snprintf(path, sizeof path, "%s/cluster.ini", cfg.out_dir);
        if ((rc = ss_mkdir_p(cfg.out_dir)) == SS_OK &&
            (rc = calib_fit_write_config(&f, path)) == SS_OK)
            printf("# wrote %s (syncsim bench network --config %s --nodes N)\n", path, path);
    }
done:
    calib_fit_free(&f);
    free(logs);
    free(held);
    free(opts);
    free(names);
    free(checks);
    if (rc != SS_OK) fprintf(stderr, "syncsim: %s\n", ss_error_message());
    return ss_status_exit_code(rc);
}
