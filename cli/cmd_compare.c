/* syncsim compare: the same training under several policies and networks, side by side.
 *
 * Each (network, partition, policy) point is one emulation in its own process (SimGrid runs one
 * simulation per process), up to --jobs at once through the job pool (common/isolate.h), writing
 * OUT/runs/<policy>-<network>[-<partition>]/. The comparison is then read back from those
 * directories (analysis/compare.h): BSP's final accuracy on each network and partition, less 0.5
 * points, is the target
 * whose first simulated time (TTA) every policy is measured at, and the speedup is
 * TTA(BSP) / TTA(policy). Results: a table on stdout, OUT/compare.csv, OUT/compare.png (accuracy
 * against simulated time) and a terminal plot. */
#include "analysis/compare.h"
#include "analysis/tta.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/outputs.h"
#include "common/status.h"
#include "common/engine.h"
#include "common/isolate.h"
#include "sim/policy/policy_registry.h"

#include "emu/dataset.h"
#include "emu/run.h"
#include "sim/platform/platform_gen.h"
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COMPARE_MAX_RUNS       64
#define COMPARE_DLCP_TOLERANCE 0.1 /* eps of the "-dlcp" policies unless --loss-tolerance */

/* ---- the policies compare runs, and its reference ---- */

/* The policy whose TTA target and TTA every run is measured against. */
static int compare_is_reference(const char *policy) {
    return !strcmp(policy, policy_registry_baseline()->name);
}

/* ---- the runs ---- */

typedef struct compare_ctx {
    run_config cfg;
    char policies_text[RUN_CONFIG_TEXT], networks_text[RUN_CONFIG_TEXT],
        partitions_text[RUN_CONFIG_TEXT];
    char *pols[16], *nets[16], *parts[8];
    int n_pols, n_nets, n_parts, n;
    compare_row runs[COMPARE_MAX_RUNS];
    int done;
    double t0_s;
    double start_s[COMPARE_MAX_RUNS]; /* when each run started (outputs_wall_s) */
} compare_ctx;

/* Splits a comma-separated list into items (in place); -1 on an empty item ("a,,b" is a typo),
 * -2 past max items. */
static int split_list(char *text, char **items, int max) {
    int n = 0;
    for (char *tok = text;;) {
        char *comma = strchr(tok, ',');
        if (comma) *comma = '\0';
        while (*tok == ' ')
            tok++;
        if (!*tok) return -1;
        if (n == max) return -2;
        items[n++] = tok;
        if (!comma) return n;
        tok = comma + 1;
    }
}

static int is_platform_file(const char *network) {
    return strchr(network, '/') != NULL || strstr(network, ".xml") != NULL;
}

static void network_label(const char *network, char *buf, size_t n) {
    const char *base = strrchr(network, '/');
    base = base ? base + 1 : network;
    snprintf(buf, n, "%s", base);
    char *dot = strstr(buf, ".xml");
    if (dot) *dot = '\0';
}

/* Two runs of the same point would write the same directory at once. */
static int listed_once(const char *option, char *const *items, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(items[i], items[j]))
                return ss_error_set(SS_EUSAGE,
                                    "%s: '%s' is listed twice (each item once: every run writes "
                                    "a directory of its own)",
                                    option, items[i]);
    return SS_OK;
}

/* The label of network k, unique among the first k+1: the platform file's base name, else its
 * directory's name and base name ("a-platform" for a/platform.xml beside b/platform.xml), else
 * with its position ("platform-2"). */
static void unique_label(char *const *nets, int k, char (*labels)[64], size_t n) {
    network_label(nets[k], labels[k], n);
    for (int round = 0; round < 2; round++) {
        int taken = 0;
        for (int j = 0; j < k; j++)
            taken |= !strcmp(labels[j], labels[k]);
        if (!taken) return;
        char base[64];
        network_label(nets[k], base, sizeof base);
        if (round == 0) {
            char dir[256];
            snprintf(dir, sizeof dir, "%s", nets[k]);
            char *slash = strrchr(dir, '/');
            if (slash) *slash = '\0';
            slash = strrchr(dir, '/');
            snprintf(labels[k], n, "%.30s-%.30s", slash ? slash + 1 : dir, base);
        } else {
            snprintf(labels[k], n, "%.50s-%d", base, k + 1);
        }
    }
}

/* "iid" is each policy's own partition (the --partition default); the others are --partition
 * values, checked by the runs' checks. */
static int is_iid(const char *partition) {
    return !strcmp(partition, "iid");
}

/* The partitions: --partition P alone (given, --partitions not) runs P only. */
static int plan_partitions(compare_ctx *c) {
    const char *list = c->cfg.partition[0] ? c->cfg.partition : c->cfg.partitions;
    /* a text set has no labels to split by: iid alone unless --partitions names others */
    if (!c->cfg.partition[0] && !options_was_set(&c->cfg, "partitions") &&
        dataset_is_text_spec(c->cfg.dataset))
        list = "iid";
    snprintf(c->partitions_text, sizeof c->partitions_text, "%s", list);
    c->n_parts = split_list(c->partitions_text, c->parts, 8);
    if (c->n_parts < 1)
        return ss_error_set(SS_EUSAGE,
                            "--partitions '%s': expected a comma-separated list of at most 8 "
                            "partitions, none empty (e.g. iid,noniid:2 or iid,dirichlet:0.5)",
                            list);
    return listed_once("--partitions", c->parts, c->n_parts);
}

/* The lists of --policies, --networks and --partitions, checked, and one run per (network,
 * partition, policy). */
static int plan_runs(compare_ctx *c) {
    snprintf(c->policies_text, sizeof c->policies_text, "%s", c->cfg.policies);
    /* --bandwidth alone (a calibrated cluster's --config) is the one network */
    const int one = !options_was_set(&c->cfg, "networks") && options_was_set(&c->cfg, "bandwidth");
    snprintf(c->networks_text, sizeof c->networks_text, "%s",
             one ? c->cfg.bandwidth : c->cfg.networks);
    c->n_pols = split_list(c->policies_text, c->pols, 16);
    c->n_nets = split_list(c->networks_text, c->nets, 16);
    int rc = plan_partitions(c);
    if (rc != SS_OK) return rc;
    if (c->n_pols < 1 || c->n_nets < 1)
        return ss_error_set(SS_EUSAGE,
                            "%s '%s': expected a comma-separated list of at most 16 items, none "
                            "empty (e.g. %s)",
                            c->n_pols < 1 ? "--policies" : "--networks",
                            c->n_pols < 1 ? c->cfg.policies : c->cfg.networks,
                            c->n_pols < 1 ? "bsp,ssp" : "5Gbps,100Gbps");
    if (c->n_pols * c->n_nets * c->n_parts > COMPARE_MAX_RUNS)
        return ss_error_set(SS_EUSAGE,
                            "compare: at most %d runs (%d policies x %d networks x %d partitions "
                            "asked)",
                            COMPARE_MAX_RUNS, c->n_pols, c->n_nets, c->n_parts);
    for (int p = 0; p < c->n_pols; p++) /* every point's policy before running any */
        if (policy_registry_check_listed(c->pols[p]) != SS_OK) return SS_EUSAGE;
    rc = listed_once("--policies", c->pols, c->n_pols);
    if (rc == SS_OK) rc = listed_once("--networks", c->nets, c->n_nets);
    if (rc != SS_OK) return rc;
    char labels[16][64];
    for (int k = 0; k < c->n_nets; k++)
        unique_label(c->nets, k, labels, sizeof labels[0]);
    for (int k = 0; k < c->n_nets; k++)
        for (int q = 0; q < c->n_parts; q++)
            for (int p = 0; p < c->n_pols; p++) {
                compare_row *r = &c->runs[c->n++];
                snprintf(r->policy, sizeof r->policy, "%s", c->pols[p]);
                snprintf(r->network, sizeof r->network, "%s", c->nets[k]);
                snprintf(r->label, sizeof r->label, "%s", labels[k]);
                snprintf(r->partition, sizeof r->partition, "%s", c->parts[q]);
                r->panel = k * c->n_parts + q;
                r->reference = compare_is_reference(r->policy);
                /* one partition: the directory of a compare without them; several: suffixed,
                 * ':' as '-' (runs/fedavg-5Gbps-noniid-2) */
                char suffix[40] = "";
                if (c->n_parts > 1) {
                    snprintf(suffix, sizeof suffix, "-%s", r->partition);
                    for (char *s = suffix; *s; s++)
                        if (*s == ':' || *s == '/') *s = '-';
                }
                char dir[sizeof r->dir];
                snprintf(dir, sizeof dir, "%s/runs/%s-%s%s", c->cfg.out_dir, r->policy, r->label,
                         suffix);
                memcpy(r->dir, dir, sizeof dir);
                r->tta_s = r->speedup = NAN;
            }
    return SS_OK;
}

/* ---- the job pool's side ---- */

static void job_log_path(void *ctx, int j, char *buf, size_t n) {
    snprintf(buf, n, "%s/log.txt", ((compare_ctx *)ctx)->runs[j].dir);
}

/* The configuration of run j: compare's options with the run's policy and network. */
static void run_config_of(const compare_ctx *c, int j, run_config *out) {
    const compare_row *r = &c->runs[j];
    run_config cfg = c->cfg;
    char policy[32];
    run_policy_value *eps = policy_option_slot(&cfg, "loss-tolerance");
    if (policy_registry_parse_listed(r->policy, policy, sizeof policy) == 2 && eps->d <= 0)
        eps->d = COMPARE_DLCP_TOLERANCE;
    snprintf(cfg.policy, sizeof cfg.policy, "%s", policy);
    snprintf(cfg.out_dir, sizeof cfg.out_dir, "%s", r->dir);
    snprintf(cfg.partition, sizeof cfg.partition, "%s", is_iid(r->partition) ? "" : r->partition);
    cfg.progress = 0;
    if (is_platform_file(r->network))
        snprintf(cfg.platform, sizeof cfg.platform, "%s", r->network);
    else
        snprintf(cfg.bandwidth, sizeof cfg.bandwidth, "%s", r->network);
    *out = cfg;
}

/* Every run's options (its network, its policy's rules) before any run starts: a bad one is a
 * usage error, not a failed row. */
static int check_runs(const compare_ctx *c) {
    run_config *cfg = ss_malloc(sizeof *cfg);
    int rc = SS_OK;
    for (int j = 0; j < c->n && rc == SS_OK; j++) {
        run_config_of(c, j, cfg);
        if (!is_platform_file(c->runs[j].network)) {
            double bps;
            rc = platform_parse_bandwidth("--networks", c->runs[j].network, &bps);
            if (rc != SS_OK) break;
        }
        run_request rq;
        outputs_request(CMD_TRAIN, cfg, 0, &rq);
        rc = run_check_emulated(&rq);
        outputs_request_free(&rq);
    }
    /* then what needs the training set (the same for every run), loaded once, without a device:
     * the children open theirs after the fork */
    dataset train, test;
    const int load = rc == SS_OK;
    if (load)
        rc = dataset_load(c->cfg.dataset, c->cfg.data_dir[0] ? c->cfg.data_dir : NULL, c->cfg.seed,
                          &train, &test);
    const int loaded = load && rc == SS_OK;
    for (int j = 0; j < c->n && loaded && rc == SS_OK; j++) {
        run_config_of(c, j, cfg);
        run_request rq;
        outputs_request(CMD_TRAIN, cfg, 0, &rq);
        rc = run_check_emulated_data(&rq, &train);
        outputs_request_free(&rq);
    }
    if (loaded) {
        dataset_free(&train);
        dataset_free(&test);
    }
    free(cfg);
    return rc;
}

/* An earlier compare's results in OUT: its table and plot, and its runs' files (a run of this
 * compare that fails before it writes would otherwise show the earlier summary as its own; a
 * run this compare does not plan would count in a report of OUT). Only the files a run writes
 * are removed, and the directories this compare does not plan; a directory holding anything
 * else stays, without a summary.json, so it counts as no run. */
static int clear_earlier(const compare_ctx *c) {
    static const char *const results[] = {
        "compare.csv",        "compare.png", "compare.svg", "compare.gp",
        "compare-curves.csv", "compare.txt", "replot.sh",   NULL};
    static const char *const run_files[] = {
        "summary.json", "metrics.csv", "steps.trace", "platform.xml",
        "config.ini",   "log.txt",     NULL};
    int rc = outputs_clear(&c->cfg, results);
    char runs_dir[1100];
    snprintf(runs_dir, sizeof runs_dir, "%s/runs", c->cfg.out_dir);
    DIR *d = rc == SS_OK ? opendir(runs_dir) : NULL;
    if (!d) return rc;
    struct dirent *e;
    while (rc == SS_OK && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        run_config dir;
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", runs_dir, e->d_name);
        if (strlen(path) >= sizeof dir.out_dir) continue;
        memcpy(dir.out_dir, path, strlen(path) + 1);
        int planned = 0;
        for (int j = 0; j < c->n; j++)
            planned |= !strcmp(c->runs[j].dir, dir.out_dir);
        rc = outputs_clear(&dir, run_files);
        if (!planned) rmdir(dir.out_dir); /* fails, as it should, where other files remain */
    }
    closedir(d);
    return rc;
}

/* The child: one emulation (its output in DIR/log.txt); every emulated run computes with one
 * BLAS thread (emu/run.c), so the results do not depend on --jobs. */
static int job_run(void *ctx, int j) {
    const compare_ctx *c = ctx;
    run_config cfg;
    run_config_of(c, j, &cfg);
    run_summary sum;
    int rc = run_emulation(&cfg, &sum, NULL);
    if (rc != SS_OK && rc != SS_EDIVERGED) fprintf(stderr, "syncsim: %s\n", ss_error_message());
    fflush(NULL);
    return ss_status_exit_code(rc);
}

/* Parent, as run j starts: its start time, for its own wall time in the progress line. */
static int job_start(void *ctx, int j) {
    compare_ctx *c = ctx;
    c->start_s[j] = outputs_wall_s();
    return SS_OK;
}

static void job_done(void *ctx, int j, const isolate_job_end *end) {
    compare_ctx *c = ctx;
    compare_row *r = &c->runs[j];
    r->exit_code = end->exit_code;
    compare_row_read(r);
    const double now = outputs_wall_s();
    printf("  [%d/%d] %-12s %-12s %-12s %s (run %.1f s; %.1f s elapsed)\n", ++c->done, c->n,
           r->policy, r->label, r->partition, r->ok ? r->status : "FAILED, see log.txt",
           now - c->start_s[j], now - c->t0_s);
    fflush(stdout);
}

/* ---- results ---- */

static void print_results(const compare_ctx *c) {
    compare_rows_print(stdout, c->runs, c->n);
    int have_ref = 0;
    for (int p = 0; p < c->n_pols; p++)
        have_ref |= compare_is_reference(c->pols[p]);
    const char *ref = policy_registry_baseline()->name;
    if (!have_ref) printf("(no %s run: TTA and speedup need --policies to include %s)\n", ref, ref);
    int language = 0; /* a language model's TTA is on perplexity (analysis/tta.h) */
    for (int i = 0; i < c->n; i++)
        language |= c->runs[i].ok && isfinite(c->runs[i].perplexity);
    if (language)
        printf("TTA(BSP): first simulated time at which the perplexity is at most BSP's final "
               "perplexity plus %.1f %% (lower is better)\n",
               TTA_DEFAULT_MARGIN * 100);
    else
        printf("TTA(BSP): first simulated time at BSP's final accuracy minus %.1f points\n",
               TTA_DEFAULT_MARGIN * 100);
}

int cmd_compare(const run_config *cfg_in) {
    compare_ctx *c = ss_calloc(1, sizeof *c);
    c->cfg = *cfg_in;
    int rc = plan_runs(c);
    if (rc == SS_OK) rc = check_runs(c);
    if (rc == SS_OK) rc = clear_earlier(c);
    if (rc == SS_OK) rc = outputs_begin(CMD_COMPARE, &c->cfg);
    if (rc != SS_OK) {
        free(c);
        return rc;
    }
    const run_config *cfg = &c->cfg;
    printf("syncsim compare: %s, %s, %d workers, batch %d, %.3g epochs, seed %llu\n"
           "%d runs (%d at once), outputs in %s/runs/\n",
           cfg->model, cfg->dataset, cfg->workers, cfg->batch, cfg->epochs,
           (unsigned long long)cfg->seed, c->n, cfg->jobs, cfg->out_dir);
    fflush(stdout);
    outputs_install_interrupt_handler();
    c->t0_s = outputs_wall_s();
    isolate_job_end ends[COMPARE_MAX_RUNS];
    isolate_pool_report rep;
    engine_share_cores(cfg->jobs < c->n ? cfg->jobs : c->n); /* --threads auto: a share each */
    const isolate_pool pool = {c->n, cfg->jobs, c, job_start, job_log_path, job_run, job_done};
    rc = isolate_pool_run(&pool, ends, &rep);
    for (int i = 0; i < c->n; i++)
        c->runs[i].started = ends[i].started;
    compare_rows_tta(c->runs, c->n, TTA_DEFAULT_MARGIN);
    print_results(c);
    char path[1024];
    outputs_path(cfg, "compare.csv", path, sizeof path);
    if (rc == SS_OK) rc = compare_rows_write_csv(path, c->runs, c->n, cfg->workers);
    int failed = 0;
    for (int i = 0; i < c->n; i++)
        failed += !c->runs[i].ok;
    /* the figure of the runs that finished; none, no figure */
    const int plotted = rc == SS_OK && failed < c->n &&
                        compare_rows_plot(cfg->out_dir, c->runs, c->n, c->n_nets * c->n_parts,
                                          cfg->workers, stdout) == SS_OK;
    if (rc == SS_OK && failed < c->n && !plotted)
        fprintf(stderr, "syncsim: %s\n", ss_error_message());
    if (rc == SS_OK)
        printf("outputs: %s/{compare.csv,%sconfig.ini}, runs/*/ (wall %.0f s)\n", cfg->out_dir,
               plotted ? "compare.png,compare.gp," : "", outputs_wall_s() - c->t0_s);
    if (rc == SS_OK && (rep.interrupted || outputs_interrupted())) rc = SS_EINTERRUPT;
    if (rc == SS_OK && failed)
        rc = ss_error_set(SS_EIO, "compare: %d of %d runs failed", failed, c->n);
    free(c);
    return rc;
}
