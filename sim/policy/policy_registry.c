/* The policy registry (policy_registry.h): the only place that spells the policies' names. */
#include "sim/policy/policy_registry.h"
#include "common/status.h"
#include "sim/policy/policy_workers.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define PO(field) offsetof(policy_config, field)

/* ---- enumerations ---- */

const policy_enum_name policy_variant_names[] = {
    {"paper", SELSYNC_VARIANT_PAPER}, {"code", SELSYNC_VARIANT_CODE}, {NULL, 0}};
const policy_enum_name policy_aggregation_names[] = {
    {"pa", AGGREGATE_PARAMS}, {"ga", AGGREGATE_GRADS}, {NULL, 0}};
const policy_enum_name policy_order_names[] = {
    {"step-then-average", SELSYNC_ORDER_STEP_THEN_AVERAGE},
    {"average-then-step", SELSYNC_ORDER_AVERAGE_THEN_STEP},
    {NULL, 0}};
const policy_enum_name policy_grouping_names[] = {
    {"shuffle", DSSYNC_GROUPING_SHUFFLE}, {"alternate", DSSYNC_GROUPING_ALTERNATE}, {NULL, 0}};
const policy_enum_name policy_priority_names[] = {{"layer", DLCP_PRIORITY_LAYER},
                                                  {"magnitude", DLCP_PRIORITY_MAGNITUDE},
                                                  {"none", DLCP_PRIORITY_NONE},
                                                  {NULL, 0}};
const policy_enum_name policy_drop_names[] = {{"zero", 0}, {"local", 1}, {NULL, 0}};
const policy_enum_name policy_overlap_names[] = {{"auto", POLICY_OVERLAP_AUTO},
                                                 {"on", POLICY_OVERLAP_ON},
                                                 {"off", POLICY_OVERLAP_OFF},
                                                 {NULL, 0}};

const char *policy_enum_format(const policy_enum_name *names, int value) {
    for (int i = 0; names[i].name; i++)
        if (names[i].value == value) return names[i].name;
    return NULL;
}

int policy_enum_parse(const policy_enum_name *names, const char *name, int *value) {
    for (int i = 0; names[i].name; i++)
        if (!strcmp(names[i].name, name)) {
            *value = names[i].value;
            return 0;
        }
    return -1;
}

/* ---- options, with the policies they belong to ---- */

static const policy_option ssp_option_rows[] = {
    {"staleness", POLICY_OPTION_LONG, PO(staleness), "3", 0, 1e9, NULL, "S",
     "ssp: staleness bound s (asp is s = infinity)", 1, "staleness"},
    {"server-lr-scale", POLICY_OPTION_DOUBLE, PO(server_lr_scale), "0", 0, 100, NULL, "X",
     "ssp/asp: the server applies each gradient with lr x X (0: 1/N, so that N pushes move the "
     "model as far as one BSP step)",
     0, NULL},
    {"comm-jitter", POLICY_OPTION_DOUBLE, PO(comm_jitter), "0", 0, 1, NULL, "CV",
     "ssp/asp: coefficient of variation of each push and pull reply's time on the wire (seeded "
     "per message; 0: none)",
     1, "comm_jitter"},
};
static const policy_option *const ssp_options[] = {&ssp_option_rows[0], &ssp_option_rows[1],
                                                   &ssp_option_rows[2], NULL};
static const policy_option *const asp_options[] = {&ssp_option_rows[1], &ssp_option_rows[2], NULL};

static const policy_option fedavg_option_rows[] = {
    {"local-steps", POLICY_OPTION_LONG, PO(local_steps), "8", 1, 1e9, NULL, "H",
     "fedavg: local steps per round", 1, "local_steps"},
    {"local-epochs", POLICY_OPTION_DOUBLE, PO(local_epochs), "0", 0, 1000, NULL, "E",
     "fedavg: local epochs per round (over a worker's share; replaces --local-steps)", 0, NULL},
    {"client-fraction", POLICY_OPTION_DOUBLE, PO(client_fraction), "1", 0.001, 1, NULL, "C",
     "fedavg: fraction of workers sampled per round", 1, "client_fraction"},
    {"post-local", POLICY_OPTION_LONG, PO(post_local_after), "0", 0, 1e12, NULL, "T",
     "fedavg: run BSP for the first T steps, then local SGD (post-local SGD)", 0,
     "post_local_after"},
};
static const policy_option *const fedavg_options[] = {
    &fedavg_option_rows[0], &fedavg_option_rows[1], &fedavg_option_rows[2], &fedavg_option_rows[3],
    NULL};

static const policy_option selsync_option_rows[] = {
    {"delta", POLICY_OPTION_THRESHOLD, PO(delta), "0.05", 0, 1e9, NULL, "D|auto:R",
     "selsync: synchronize when the relative gradient change is >= D (0 = BSP; published runs "
     "used 0.3 and 0.5, but Delta's scale depends on the model: see the summary's delta_p50..). "
     "auto:R: D from the Delta of the steps after the warm-up, aiming at local-step ratio R "
     "(syncsim's extension)",
     0, "delta"},
    {"delta-every", POLICY_OPTION_LONG, PO(delta_every), "0", 0, 1e12, NULL, "K",
     "selsync with --delta auto:R: choose D again every K steps from the largest Delta of the "
     "last K, so that the local-step ratio follows R as Delta drifts (the workers all-gather "
     "their Delta, 8 bytes each, instead of the 1-byte flag; 0: keep the calibration's D)",
     0, "delta_every"},
    {"ewma-window", POLICY_OPTION_INT, PO(ewma_window), "25", 0, 1024, NULL, "W",
     "selsync: values in the EWMA window; steps before it fills synchronize (0: no warm-up)", 0,
     "ewma_window"},
    {"ewma-alpha", POLICY_OPTION_DOUBLE, PO(ewma_alpha), "0", 0, 1, NULL, "A",
     "selsync: EWMA smoothing factor (0: N/100 for paper, 0.01 for code)", 0, "ewma_alpha"},
    {"selsync-variant", POLICY_OPTION_ENUM, PO(variant), "paper", 0, 0, policy_variant_names, "V",
     "selsync: paper (signed Delta of the global norm) or code (|Delta| of summed layer norms, "
     "smoothed twice)",
     0, "selsync_variant"},
    {"aggregation", POLICY_OPTION_ENUM, PO(aggregation), "pa", 0, 0, policy_aggregation_names, "A",
     "selsync: parameter (pa) or gradient (ga) aggregation on sync steps", 0, "aggregation"},
    {"selsync-order", POLICY_OPTION_ENUM, PO(order), "step-then-average", 0, 0, policy_order_names,
     "O", "selsync pa: local step before averaging (paper) or after it (public code)", 0,
     "selsync_order"},
    {"inject-alpha", POLICY_OPTION_DOUBLE, PO(inject_alpha), "0", 0, 1, NULL, "A",
     "selsync data injection: fraction of workers sharing samples each step", 0, "inject_alpha"},
    {"inject-beta", POLICY_OPTION_DOUBLE, PO(inject_beta), "0", 0, 1, NULL, "B",
     "selsync data injection: fraction of its batch a sharing worker sends", 0, "inject_beta"},
};
static const policy_option *const selsync_options[] = {
    &selsync_option_rows[0], &selsync_option_rows[1],
    &selsync_option_rows[2], &selsync_option_rows[3],
    &selsync_option_rows[4], &selsync_option_rows[5],
    &selsync_option_rows[6], &selsync_option_rows[7],
    &selsync_option_rows[8], NULL};

static const policy_option dssync_option_rows[] = {
    {"group-size", POLICY_OPTION_INT, PO(group_size), "2", 1, 65536, NULL, "G",
     "dssync: workers averaging parameters together each step", 0, "group_size"},
    {"grouping", POLICY_OPTION_ENUM, PO(grouping), "shuffle", 0, 0, policy_grouping_names, "K",
     "dssync: groups reshuffled every step from the shared seed, or the published 4-worker "
     "alternation {0,1},{2,3} / {0,3},{1,2}",
     0, "grouping"},
};
static const policy_option *const dssync_options[] = {&dssync_option_rows[0],
                                                      &dssync_option_rows[1], NULL};

static const policy_option dlcp_option_rows[] = {
    {"loss-tolerance", POLICY_OPTION_DOUBLE, PO(loss_tolerance), "0", 0, 0.99, NULL, "EPS",
     "DLCP: an exchange may finish without the last fraction EPS of its data (0: off)", 0,
     "loss_tolerance"},
    {"deadline", POLICY_OPTION_DURATION, PO(deadline_s), "0s", 0, 0, NULL, "T",
     "DLCP: past the (1 - EPS) part, keep sending chunks until T after the exchange began", 0,
     NULL},
    {"priority", POLICY_OPTION_ENUM, PO(priority), "layer", 0, 0, policy_priority_names, "P",
     "DLCP: chunk order (front layers first, large values first, or none)", 0, "priority"},
    {"chunk-size", POLICY_OPTION_DOUBLE, PO(chunk_bytes), "16384", 4, 1e12, NULL, "BYTES",
     "DLCP: chunk size of the prioritized data", 0, "chunk_bytes"},
    {"drop", POLICY_OPTION_ENUM, PO(drop_keep_local), "zero", 0, 0, policy_drop_names, "D",
     "DLCP: a dropped entry counts as zero or keeps the worker's own value", 0, NULL},
};
static const policy_option *const dlcp_options[] = {&dlcp_option_rows[0], &dlcp_option_rows[1],
                                                    &dlcp_option_rows[2], &dlcp_option_rows[3],
                                                    &dlcp_option_rows[4], NULL};

/* Overlap as PyTorch DDP does it (Li et al., "PyTorch Distributed: Experiences on Accelerating
 * Data Parallel Training", VLDB 2020): gradients go into buckets of bucket_cap_mb (25 MiB by
 * default) in reverse parameter order, and a bucket's all-reduce starts as soon as the backward
 * pass has produced all its gradients. Only the policies whose exchange is a plain all-reduce of
 * the gradients have it: SelSync's decision needs the whole gradient (its norm), so its steps
 * overlap nothing; DS-Sync and FedAvg's rounds average parameters after the step; SSP/ASP push to
 * servers. */
static const policy_option overlap_option_rows[] = {
    {"overlap", POLICY_OPTION_ENUM, PO(overlap), "auto", 0, 0, policy_overlap_names, "M",
     "bsp, fedavg's post-local bsp steps: all-reduce gradient buckets while the backward pass "
     "runs (auto: on in replays of profiles, off in emulation and real mode; selsync, dssync, "
     "ssp, asp overlap nothing: selsync's decision needs the whole gradient)",
     POLICY_OPTION_REPLAY | POLICY_OPTION_VALIDATE, NULL},
    {"bucket-mb", POLICY_OPTION_DOUBLE, PO(bucket_mb), "25", 0.001, 1e6, NULL, "MB",
     "overlap: gradient bucket cap in MiB (PyTorch DDP's bucket_cap_mb)",
     POLICY_OPTION_REPLAY | POLICY_OPTION_VALIDATE, NULL},
};
static const policy_option *const overlap_options[] = {&overlap_option_rows[0],
                                                       &overlap_option_rows[1], NULL};

static const struct {
    unsigned bit;
    const policy_option *const *options;
} families[] = {{POLICY_FAMILY_DLCP, dlcp_options}, {POLICY_FAMILY_OVERLAP, overlap_options}};

/* ---- hooks ---- */

static int asp_check(const run_config *cfg, policy_given_fn given) {
    if (given(cfg, "staleness"))
        return ss_error_set(SS_EUSAGE, "--staleness does not apply to --policy asp (asp is ssp "
                                       "with s = infinity)");
    return SS_OK;
}

static int fedavg_check(const run_config *cfg, policy_given_fn given) {
    if (given(cfg, "local-epochs") && given(cfg, "local-steps"))
        return ss_error_set(SS_EUSAGE, "--local-epochs and --local-steps both set the length of a "
                                       "fedavg round: give one");
    return SS_OK;
}

static int selsync_check(const run_config *cfg, policy_given_fn given) {
    if (given(cfg, "selsync-order") && !strcmp(policy_option_value(cfg, "aggregation")->text, "ga"))
        return ss_error_set(SS_EUSAGE, "--selsync-order orders the local step and the parameter "
                                       "averaging of --aggregation pa; with --aggregation ga the "
                                       "averaged gradient is the step: leave it out");
    if (policy_option_value(cfg, "delta-every")->l > 0 &&
        strncmp(policy_option_value(cfg, "delta")->text, "auto:", 5) != 0)
        return ss_error_set(SS_EUSAGE,
                            "--delta-every chooses the delta of --delta auto:R again; "
                            "with --delta %s the threshold is fixed: give --delta "
                            "auto:R (0 < R < 1) or leave --delta-every out",
                            policy_option_value(cfg, "delta")->text);
    if ((policy_option_value(cfg, "inject-alpha")->d > 0) !=
        (policy_option_value(cfg, "inject-beta")->d > 0))
        return ss_error_set(SS_EUSAGE, "data injection needs both --inject-alpha and "
                                       "--inject-beta above 0");
    return SS_OK;
}

static int dssync_check(const run_config *cfg, policy_given_fn given) {
    (void)given;
    const int g = policy_option_value(cfg, "group-size")->i;
    if (g > cfg->workers)
        return ss_error_set(SS_EUSAGE,
                            "--group-size %d is larger than --workers %d: a dssync group takes "
                            "at most all the workers",
                            g, cfg->workers);
    return SS_OK;
}

static void ssp_label(const policy_config *pc, char *buf, size_t n) {
    snprintf(buf, n, "%s (s=%ld)", policy_kind_name(pc->kind), pc->staleness);
}

static void fedavg_label(const policy_config *pc, char *buf, size_t n) {
    snprintf(buf, n, "%s (H=%ld)", policy_kind_name(pc->kind), pc->local_steps);
}

static void selsync_label(const policy_config *pc, char *buf, size_t n) {
    if (pc->delta < 0 && pc->delta_every > 0)
        snprintf(buf, n, "%s (\xce\xb4=auto:%g every %ld)", policy_kind_name(pc->kind), -pc->delta,
                 pc->delta_every);
    else if (pc->delta < 0)
        snprintf(buf, n, "%s (\xce\xb4=auto:%g)", policy_kind_name(pc->kind), -pc->delta);
    else
        snprintf(buf, n, "%s (\xce\xb4=%g)", policy_kind_name(pc->kind), pc->delta);
}

static void dssync_label(const policy_config *pc, char *buf, size_t n) {
    snprintf(buf, n, "%s (G=%d)", policy_kind_name(pc->kind), pc->group_size);
}

/* FedAvg: a round computes on the sampled clients only. */
static double fedavg_computing_workers(const policy_config *pc) {
    long m = lround(pc->client_fraction * pc->workers);
    return m < 1 ? 1 : (double)m;
}

/* FedAvg: E local epochs over a worker's share |D|/N give H. */
static void fedavg_resolve(policy_config *pc, size_t train_samples) {
    if (pc->local_epochs <= 0) return;
    pc->local_steps = lround(pc->local_epochs * (double)train_samples / pc->workers / pc->batch);
    if (pc->local_steps < 1) pc->local_steps = 1;
}

/* ---- the rows, in policy_kind order ---- */

static const policy_info policies[] = {
    {.name = "bsp",
     .kind = POLICY_BSP,
     .worker = policy_bsp_worker,
     .summary = "bulk synchronous: all-reduce the gradients every step",
     .baseline = 1,
     .compare_default = 1,
     .default_partition = "defdp",
     .families = POLICY_FAMILY_DLCP | POLICY_FAMILY_OVERLAP},
    {.name = "ssp",
     .host_sync = 1,
     .kind = POLICY_SSP,
     .worker = policy_ssp_worker,
     .summary = "stale synchronous: parameter servers, workers at most s steps apart",
     .needs_ps = 1,
     .compare_default = 1,
     .default_partition = "defdp",
     .options = ssp_options,
     .label = ssp_label},
    {.name = "asp",
     .host_sync = 1,
     .kind = POLICY_ASP,
     .worker = policy_ssp_worker,
     .summary = "asynchronous: parameter servers, no staleness bound",
     .needs_ps = 1,
     .default_partition = "defdp",
     .options = asp_options,
     .check = asp_check},
    {.name = "fedavg",
     .kind = POLICY_FEDAVG,
     .worker = policy_fedavg_worker,
     .summary = "federated averaging / local SGD: H local steps, then parameter averaging",
     .compare_default = 1,
     .default_partition = "defdp",
     .families = POLICY_FAMILY_DLCP | POLICY_FAMILY_OVERLAP,
     .options = fedavg_options,
     .check = fedavg_check,
     .label = fedavg_label,
     .computing_workers = fedavg_computing_workers,
     .resolve = fedavg_resolve},
    {.name = "selsync",
     .host_sync = 1,
     .kind = POLICY_SELSYNC,
     .worker = policy_selsync_worker,
     .summary = "selective synchronization: average when the gradient changes by delta or more",
     .compare_default = 1,
     .default_partition = "seldp",
     .families = POLICY_FAMILY_DLCP,
     .options = selsync_options,
     .check = selsync_check,
     .label = selsync_label,
     .local_batch = policy_selsync_local_batch,
     .max_batch = policy_selsync_max_batch},
    {.name = "dssync",
     .kind = POLICY_DSSYNC,
     .worker = policy_dssync_worker,
     .summary = "decentralized: groups of G workers average their parameters every step",
     .default_partition = "defdp",
     .families = POLICY_FAMILY_DLCP,
     .options = dssync_options,
     .check = dssync_check,
     .label = dssync_label},
};
#define POLICY_ROWS ((int)(sizeof policies / sizeof policies[0]))
_Static_assert(sizeof policies / sizeof policies[0] == POLICY_KIND_COUNT,
               "one registry row per policy_kind");

int policy_registry_count(void) {
    return POLICY_ROWS;
}

const policy_info *policy_registry_at(int i) {
    return i >= 0 && i < POLICY_ROWS ? &policies[i] : NULL;
}

const policy_info *policy_registry_find(const char *name) {
    for (int i = 0; i < POLICY_ROWS; i++)
        if (!strcmp(policies[i].name, name)) return &policies[i];
    return NULL;
}

const policy_info *policy_registry_of_kind(policy_kind kind) {
    for (int i = 0; i < POLICY_ROWS; i++)
        if (policies[i].kind == kind) return &policies[i];
    return NULL;
}

const policy_info *policy_registry_baseline(void) {
    for (int i = 0; i < POLICY_ROWS; i++)
        if (policies[i].baseline) return &policies[i];
    SS_ASSERT(!"the registry has no baseline row");
    return NULL;
}

const char *policy_registry_names(const char *sep, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < POLICY_ROWS && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? sep : "", policies[i].name);
    return buf;
}

const char *policy_registry_compare_default(char *buf, size_t n) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < POLICY_ROWS && len < n; i++)
        if (policies[i].compare_default)
            len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? "," : "", policies[i].name);
    return buf;
}

int policy_registry_parse_listed(const char *name, char *base, size_t n) {
    if (policy_registry_find(name)) {
        snprintf(base, n, "%s", name);
        return 1;
    }
    size_t len = strlen(name);
    if (len <= 5 || strcmp(name + len - 5, "-dlcp")) return 0;
    snprintf(base, n, "%.*s", (int)(len - 5), name);
    const policy_info *p = policy_registry_find(base);
    return p && (p->families & POLICY_FAMILY_DLCP) ? 2 : 0;
}

int policy_registry_check_listed(const char *name) {
    char base[32], valid[512];
    if (policy_registry_parse_listed(name, base, sizeof base)) return SS_OK;
    size_t len = strlen(policy_registry_names(", ", valid, sizeof valid));
    const char *sep = ", and ";
    for (int i = 0; i < policy_registry_count() && len < sizeof valid; i++) {
        const policy_info *p = policy_registry_at(i);
        if (!(p->families & POLICY_FAMILY_DLCP)) continue;
        len += (size_t)snprintf(valid + len, sizeof valid - len, "%s%s-dlcp", sep, p->name);
        sep = ", ";
    }
    return ss_error_set(SS_EUSAGE,
                        "--policies: unknown policy '%s' (valid: %s for their DLCP bounded-loss "
                        "form)",
                        name, valid);
}

void policy_label(const policy_config *pc, char *buf, size_t n) {
    const policy_info *p = policy_registry_of_kind(pc->kind);
    if (p && p->label)
        p->label(pc, buf, n);
    else
        snprintf(buf, n, "%s", policy_kind_name(pc->kind));
}

int policy_kind_parse(const char *text, policy_kind *out) {
    const policy_info *p = policy_registry_find(text);
    if (p) {
        *out = p->kind;
        return SS_OK;
    }
    char valid[256];
    return ss_error_set(SS_EUSAGE, "--policy: unknown policy '%s' (valid: %s)", text,
                        policy_registry_names(", ", valid, sizeof valid));
}

const char *policy_kind_name(policy_kind k) {
    const policy_info *p = policy_registry_of_kind(k);
    return p ? p->name : "?";
}

int policy_local_batch(const policy_config *pc) {
    const policy_info *p = policy_registry_of_kind(pc->kind);
    return p && p->local_batch ? p->local_batch(pc) : pc->batch;
}

int policy_max_batch(const policy_config *pc) {
    const policy_info *p = policy_registry_of_kind(pc->kind);
    return p && p->max_batch ? p->max_batch(pc) : pc->batch;
}

int policy_is_async(const policy_config *pc) {
    const policy_info *p = policy_registry_of_kind(pc->kind);
    return p && p->needs_ps;
}

/* ---- the options of every policy, each once ---- */

static const policy_option *all_options[RUN_CONFIG_POLICY_OPTIONS];
static int n_all_options;
static pthread_once_t all_options_once = PTHREAD_ONCE_INIT;

static void add_options(const policy_option *const *list) {
    for (int j = 0; list && list[j]; j++) {
        int seen = 0;
        for (int k = 0; k < n_all_options && !seen; k++)
            seen = all_options[k] == list[j];
        if (seen) continue;
        SS_ASSERT(n_all_options < RUN_CONFIG_POLICY_OPTIONS); /* else raise the slots */
        all_options[n_all_options++] = list[j];
    }
}

static void collect_options(void) {
    for (int i = 0; i < POLICY_ROWS; i++)
        add_options(policies[i].options);
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        add_options(families[f].options);
}

int policy_option_count(void) {
    pthread_once(&all_options_once, collect_options);
    return n_all_options;
}

const policy_option *policy_option_at(int k) {
    return k >= 0 && k < policy_option_count() ? all_options[k] : NULL;
}

const policy_option *policy_option_find(const char *name) {
    for (int k = 0; k < policy_option_count(); k++)
        if (!strcmp(all_options[k]->name, name)) return all_options[k];
    return NULL;
}

int policy_option_index(const policy_option *o) {
    for (int k = 0; k < policy_option_count(); k++)
        if (all_options[k] == o) return k;
    return -1;
}

static int listed(const policy_option *const *list, const policy_option *o) {
    for (int j = 0; list && list[j]; j++)
        if (list[j] == o) return 1;
    return 0;
}

int policy_option_applies(const policy_option *o, const policy_info *p) {
    if (listed(p->options, o)) return 1;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        if ((p->families & families[f].bit) && listed(families[f].options, o)) return 1;
    return 0;
}

run_policy_value *policy_option_slot(run_config *cfg, const char *name) {
    int k = policy_option_index(policy_option_find(name));
    SS_ASSERT(k >= 0);
    return &cfg->policy_options[k];
}

const run_policy_value *policy_option_value(const run_config *cfg, const char *name) {
    int k = policy_option_index(policy_option_find(name));
    SS_ASSERT(k >= 0);
    return &cfg->policy_options[k];
}
