/* The policy configuration from the resolved options (policy_build.h), and its defaults. */
#include "sim/policy/policy_build.h"
#include "common/number.h"
#include "common/status.h"
#include "common/jitter.h"
#include "common/units.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A THRESHOLD: a number in [min, max], or auto:R (0 < R < 1) as -R. */
static int threshold_parse(const policy_option *o, const char *text, double *out) {
    double x;
    if (!strncmp(text, "auto:", 5)) {
        if (number_parse_double(text + 5, &x) != 0 || x <= 0 || x >= 1) return SS_EUSAGE;
        *out = -x;
        return SS_OK;
    }
    if (number_parse_double(text, &x) != 0 || x < o->min || x > o->max) return SS_EUSAGE;
    *out = x;
    return SS_OK;
}

/* A DURATION: a decimal number with a time unit ("500ms", "2s"), or a bare 0; never negative. */
static int duration_parse(const char *text, double *seconds) {
    double x;
    if (units_parse_time(text, &x) != 0 && (number_parse_double(text, &x) != 0 || x != 0))
        return SS_EUSAGE;
    if (!(x >= 0)) return SS_EUSAGE;
    *seconds = x;
    return SS_OK;
}

int policy_option_parse(const policy_option *o, const char *text, run_policy_value *v) {
    memset(v, 0, sizeof *v);
    switch (o->type) {
    case POLICY_OPTION_INT:
    case POLICY_OPTION_LONG: {
        long long x;
        if (number_parse_llong(text, &x) != 0 || x < o->min || x > o->max) break;
        if (o->type == POLICY_OPTION_INT)
            v->i = (int)x;
        else
            v->l = (long)x;
        return SS_OK;
    }
    case POLICY_OPTION_DOUBLE: {
        double x;
        if (number_parse_double(text, &x) != 0 || x < o->min || x > o->max) break;
        v->d = x;
        return SS_OK;
    }
    case POLICY_OPTION_THRESHOLD: {
        double x;
        if (threshold_parse(o, text, &x) != SS_OK) break;
        snprintf(v->text, sizeof v->text, "%s", text);
        return SS_OK;
    }
    case POLICY_OPTION_DURATION:
    case POLICY_OPTION_ENUM: {
        double s;
        if (o->type == POLICY_OPTION_DURATION && duration_parse(text, &s) != SS_OK) break;
        if (strlen(text) >= sizeof v->text) break;
        snprintf(v->text, sizeof v->text, "%s", text);
        return SS_OK;
    }
    }
    if (o->type == POLICY_OPTION_DURATION)
        return ss_error_set(SS_EUSAGE,
                            "--%s: invalid value '%s' (expected a duration >= 0: a decimal number "
                            "and a unit, e.g. 500ms, 2s, 0s)",
                            o->name, text);
    if (o->type == POLICY_OPTION_THRESHOLD)
        return ss_error_set(SS_EUSAGE,
                            "--%s: invalid value '%s' (expected a decimal number in [%g, %g], or "
                            "auto:R with 0 < R < 1, a target local-step ratio)",
                            o->name, text, o->min, o->max);
    return ss_error_set(SS_EUSAGE, "--%s: invalid value '%s'", o->name, text);
}

int policy_option_apply(const policy_option *o, const run_policy_value *v, policy_config *pc) {
    char *field = (char *)pc + o->offset;
    switch (o->type) {
    case POLICY_OPTION_INT:
        *(int *)field = v->i;
        return SS_OK;
    case POLICY_OPTION_LONG:
        *(long *)field = v->l;
        return SS_OK;
    case POLICY_OPTION_DOUBLE:
        *(double *)field = v->d;
        return SS_OK;
    case POLICY_OPTION_ENUM:
        if (policy_enum_parse(o->names, v->text, (int *)field) != 0)
            return ss_error_set(SS_EUSAGE, "--%s: invalid value '%s'", o->name, v->text);
        return SS_OK;
    case POLICY_OPTION_THRESHOLD:
        if (threshold_parse(o, v->text, (double *)field) != SS_OK)
            return ss_error_set(SS_EUSAGE, "--%s: invalid value '%s'", o->name, v->text);
        return SS_OK;
    case POLICY_OPTION_DURATION:
        if (duration_parse(v->text, (double *)field) != SS_OK)
            return ss_error_set(SS_EUSAGE, "--%s: invalid duration '%s'", o->name, v->text);
        return SS_OK;
    }
    return ss_error_set(SS_EUSAGE, "--%s: unknown option type", o->name);
}

/* The exchange of synchronous steps, as the banner and summary.json name it: "auto", "ring, 4
 * channels", "tree, protocol LL", "ps". */
void policy_describe_exchange(const policy_config *pc, char *buf, size_t n) {
    if (pc->use_ps) {
        snprintf(buf, n, "ps");
        return;
    }
    int used = snprintf(buf, n, "%s", sim_allreduce_algo_name(pc->coll.algo));
    if (pc->coll.channels > 1 && used >= 0 && (size_t)used < n)
        used += snprintf(buf + used, n - (size_t)used, ", %d channels", pc->coll.channels);
    if (pc->coll.protocol != SIM_PROTOCOL_AUTO && used >= 0 && (size_t)used < n)
        snprintf(buf + used, n - (size_t)used, ", protocol %s",
                 sim_nccl_protocol_name(pc->coll.protocol));
}

void policy_config_default(policy_config *pc) {
    memset(pc, 0, sizeof *pc);
    pc->kind = policy_registry_baseline()->kind;
    pc->workers = 1;
    pc->steps = 1;
    pc->batch = 32;
    pc->eval_every = 0;
    pc->ps_servers = 1;
    pc->coll.algo = SIM_ALLREDUCE_AUTO;
    pc->coll.channels = 1;
    pc->compute.mode = SIM_COMPUTE_FLOPS;
    pc->compute.scale = 1.0;
    pc->flag_bytes = 1.0;
    pc->straggler_factor = 1.0;
    /* the policies' own defaults: those of their options */
    for (int k = 0; k < policy_option_count(); k++) {
        const policy_option *o = policy_option_at(k);
        run_policy_value v;
        int rc = policy_option_parse(o, o->def, &v);
        if (rc == SS_OK) rc = policy_option_apply(o, &v, pc);
        SS_ASSERT(rc == SS_OK); /* the registry's own defaults must be valid */
    }
}

/* --slow-workers: the ranks always slower by --slow-factor. */
static int parse_slowdown(const run_config *cfg, policy_config *pc) {
    if (!cfg->slow_workers[0]) return SS_OK;
    double *slow = ss_malloc(sizeof(double) * (size_t)cfg->workers);
    for (int i = 0; i < cfg->workers; i++)
        slow[i] = 1.0;
    double *ranks = ss_malloc(sizeof(double) * (size_t)cfg->workers);
    int n = 0, rc = number_parse_list(cfg->slow_workers, 1, ranks, cfg->workers, &n);
    for (int i = 0; rc == 0 && i < n; i++)
        for (int j = 0; j < i; j++)
            if (ranks[j] == ranks[i]) rc = -1; /* a rank twice: a typo for another */
    for (int i = 0; rc == 0 && i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= cfg->workers) rc = -1;
        if (rc == 0) slow[(int)ranks[i]] = cfg->slow_factor;
    }
    free(ranks);
    if (rc != 0) {
        free(slow);
        return ss_error_set(SS_EUSAGE,
                            "--slow-workers: '%s' is not a list of distinct worker ranks in "
                            "[0, %d] (e.g. 0,5)",
                            cfg->slow_workers, cfg->workers - 1);
    }
    pc->slowdown = slow;
    return SS_OK;
}

/* Steps from epochs (an epoch is |D| samples processed by the computing workers together), the
 * policy's own resolution, and the evaluation period. */
static int schedule(const run_config *cfg, policy_build_env *env, policy_config *pc) {
    const policy_info *p = policy_registry_of_kind(pc->kind);
    const double computing = p->computing_workers ? p->computing_workers(pc) : pc->workers;
    double per_epoch = (double)env->train_samples / (computing * pc->batch);
    if (per_epoch < 1)
        return ss_error_set(SS_EUSAGE,
                            "--workers %d x --batch %d exceeds the training set (%zu samples): "
                            "not even one step per epoch",
                            pc->workers, pc->batch, env->train_samples);
    env->steps_per_epoch = (long)floor(per_epoch);
    pc->steps = lround(cfg->epochs * per_epoch);
    if (pc->steps < 1) pc->steps = 1;
    if (p->resolve) p->resolve(pc, env->train_samples);
    pc->eval_every = cfg->eval_every > 0          ? cfg->eval_every
                     : env->steps_per_epoch >= 10 ? env->steps_per_epoch / 10
                                                  : 1;
    return SS_OK;
}

/* The exchange of the synchronous steps: an all-reduce algorithm or parameter servers. */
static int build_exchange(const run_config *cfg, policy_config *pc) {
    if (!strcmp(cfg->collective, "ps")) {
        pc->use_ps = 1;
    } else {
        int rc = sim_allreduce_algo_parse("--collective", cfg->collective, &pc->coll.algo);
        if (rc != SS_OK) return rc;
    }
    pc->coll.segment_bytes = cfg->segment_bytes;
    pc->coll.channels = cfg->channels > 0 ? cfg->channels : 1;
    int rc = sim_nccl_protocol_parse("--protocol", cfg->protocol[0] ? cfg->protocol : "auto",
                                     &pc->coll.protocol);
    if (rc != SS_OK) return rc;
    if (pc->coll.protocol != SIM_PROTOCOL_AUTO &&
        (pc->use_ps || !coll_takes_protocol(pc->coll.algo, pc->coll.protocol)))
        return ss_error_set(SS_EUSAGE,
                            "--protocol %s applies to --collective auto, hier, hier-coarse, "
                            "dbtree, ring or ring-coarse (NCCL's algorithms), not %s",
                            cfg->protocol, cfg->collective);
    if ((rc = coll_check_channels(pc->coll.channels, pc->coll.algo, pc->use_ps, cfg->collective)))
        return rc;
    pc->ps_servers = cfg->ps_servers;
    return SS_OK;
}

/* --overlap on in a run: an all-reduce of the gradients, timed per layer. The per-layer times
 * follow --compute flops (FLOPs / host speed); measured seconds have no per-layer split. */
/* --overlap in emulation: auto is off, so that the replay of the run's trace (which records each
 * step's compute as a whole) reproduces its times; on needs per-layer times (the compute model's,
 * or FLOPs on the host's speed) and a plain all-reduce. */
static int resolve_overlap(policy_config *pc) {
    const policy_info *p = policy_registry_of_kind(pc->kind);
    const int family = p && policy_option_applies(policy_option_find("overlap"), p);
    const int allreduce = !pc->use_ps && pc->loss_tolerance <= 0;
    const int layered =
        pc->compute.mode == SIM_COMPUTE_MODEL || pc->compute.mode == SIM_COMPUTE_FLOPS;
    if (pc->overlap == POLICY_OVERLAP_AUTO) pc->overlap = POLICY_OVERLAP_OFF;
    if (pc->overlap == POLICY_OVERLAP_ON && !family)
        return ss_error_set(SS_EUSAGE,
                            "--overlap on: policy %s has no all-reduce of the whole "
                            "gradient to overlap with the backward pass",
                            p ? p->name : "?");
    if (pc->overlap != POLICY_OVERLAP_ON) return SS_OK;
    if (!allreduce)
        return ss_error_set(SS_EUSAGE, "--overlap on applies to all-reduce exchanges without "
                                       "--loss-tolerance (not --collective ps)");
    if (!layered)
        return ss_error_set(SS_EUSAGE,
                            "--overlap on times the layers: use --compute model or flops (measured "
                            "seconds have no per-layer split)");
    return SS_OK;
}

/* --framework (default eager) in model mode, and the policy's own read-backs to the host. */
int policy_compute_framework(const run_config *cfg, policy_config *pc) {
    const policy_info *p = policy_registry_of_kind(pc->kind);
    pc->compute.framework = SIM_FRAMEWORK_IDEAL;
    pc->compute.host_sync = p ? p->host_sync : 0;
    if (pc->compute.mode != SIM_COMPUTE_MODEL || !cfg->framework[0]) return SS_OK;
    return sim_framework_parse("--framework", cfg->framework, &pc->compute.framework);
}

int policy_config_build(const run_config *cfg, policy_build_env *env, policy_config *pc) {
    policy_config_default(pc);
    const int run = env->mode == POLICY_BUILD_RUN;
    const char *name = cfg->policy[0] ? cfg->policy : policy_registry_baseline()->name;
    int rc = policy_kind_parse(name, &pc->kind);
    if (rc != SS_OK) return rc;
    if (run) pc->workers = cfg->workers;
    pc->batch = cfg->batch;
    pc->seed = cfg->seed;
    if ((rc = build_exchange(cfg, pc)) != SS_OK) return rc;
    if (run) {
        if ((rc = sim_compute_parse("--compute", cfg->compute, &pc->compute)) != SS_OK) return rc;
        if (pc->compute.mode == SIM_COMPUTE_TRACE)
            return ss_error_set(SS_EUSAGE,
                                "--compute trace is for replay; use model, flops or measured");
        /* --precision (default pytorch), unless --compute model:PRECISION named one */
        if (pc->compute.mode == SIM_COMPUTE_MODEL && cfg->precision[0] &&
            strncmp(cfg->compute, "model:", 6) != 0 &&
            (rc = sim_precision_parse("--precision", cfg->precision, &pc->compute.precision)) !=
                SS_OK)
            return rc;
        if ((rc = policy_compute_framework(cfg, pc)) != SS_OK) return rc;
        if ((rc = sim_jitter_compute_parse("--compute-jitter", cfg->compute_jitter, cfg->model,
                                           &pc->compute_jitter)) != SS_OK)
            return rc;
    }
    for (int k = 0; k < policy_option_count(); k++)
        if ((rc = policy_option_apply(policy_option_at(k), &cfg->policy_options[k], pc)) != SS_OK)
            return rc;
    if (!run) return SS_OK;
    if ((rc = resolve_overlap(pc)) != SS_OK) return rc;
    if (pc->overlap == POLICY_OVERLAP_ON && !strcmp(cfg->network_model, "ns-3"))
        return ss_error_set(SS_EUSAGE, "--overlap on cannot run under --network-model ns-3 "
                                       "(SimGrid's ns-3 binding aborts when the buckets' flows "
                                       "congest a link); use --overlap off or LV08");
    pc->straggler_prob = cfg->straggler_prob;
    pc->straggler_factor = cfg->straggler_factor;
    pc->background_load = cfg->background_load;
    if ((rc = parse_slowdown(cfg, pc)) != SS_OK) return rc;
    if (env->train_samples == 0) return SS_OK; /* the options only, before the data is loaded */
    rc = schedule(cfg, env, pc);
    if (rc != SS_OK) {
        free((void *)pc->slowdown);
        pc->slowdown = NULL;
    }
    return rc;
}
