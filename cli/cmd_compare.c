/* syncsim compare: the same training under several policies and networks, side by side.
 *
 * Each (network, policy) point is one emulation in its own process (SimGrid runs one simulation
 * per process), up to --jobs at once, writing OUT/runs/<policy>-<network>/. The comparison is then
 * read back from those directories: BSP's final accuracy on each network, less 0.5 points, is the
 * target whose first simulated time (TTA) every policy is measured at, and the speedup is
 * TTA(BSP) / TTA(policy). Results: a table on stdout, OUT/compare.csv, OUT/compare.png (accuracy
 * against simulated time) and a terminal plot. */
#include "analysis/runs.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/outputs.h"
#include "common/status.h"
#include "sim/policy_registry.h"

#include <cblas.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define COMPARE_MAX_RUNS       64
#define COMPARE_TARGET_MARGIN  0.005 /* DESIGN.md: BSP's final accuracy minus 0.5 points */
#define COMPARE_DLCP_TOLERANCE 0.1   /* eps of the "-dlcp" policies unless --loss-tolerance */

typedef struct compare_run {
    char policy[16];
    char network[RUN_CONFIG_TEXT]; /* bandwidth, or a platform file */
    char label[64];                /* network as shown: "5Gbps", or the file's base name */
    char dir[RUN_CONFIG_TEXT + 96];
    pid_t pid;
    int exit_code;
    /* read back */
    int ok;
    char status[16];
    double accuracy, sim_time_s, lssr, bytes_sent;
    double dropped; /* DLCP: fraction of the exchanged data dropped */
    double tta_s, speedup;
} compare_run;

/* A policy of the list: 1 for a plain policy, 2 for "<policy>-dlcp" (its exchanges with DLCP's
 * bounded loss: --loss-tolerance, or COMPARE_DLCP_TOLERANCE), 0 if unknown. `base` gets the
 * policy proper. */
static int compare_policy_base(const char *name, char *base, size_t n) {
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

/* SS_EUSAGE listing the valid names ("bsp, ..., and bsp-dlcp, ...") if `name` is not one. */
static int check_policy(const char *name) {
    char base[32], valid[512];
    if (compare_policy_base(name, base, sizeof base)) return SS_OK;
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

/* Splits a comma-separated list into items (in place). */
static int split_list(char *text, char **items, int max) {
    int n = 0;
    for (char *tok = strtok(text, ","); tok && n < max; tok = strtok(NULL, ",")) {
        while (*tok == ' ')
            tok++;
        if (*tok) items[n++] = tok;
    }
    return n;
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

/* The child: one emulation, its stdout and stderr into DIR/log.txt. */
static int run_child(const run_config *base, const compare_run *r, int serial_blas) {
    run_config cfg = *base;
    char policy[32];
    run_policy_value *eps = policy_option_slot(&cfg, "loss-tolerance");
    if (compare_policy_base(r->policy, policy, sizeof policy) == 2 && eps->d <= 0)
        eps->d = COMPARE_DLCP_TOLERANCE;
    snprintf(cfg.policy, sizeof cfg.policy, "%s", policy);
    snprintf(cfg.out_dir, sizeof cfg.out_dir, "%s", r->dir);
    cfg.progress = 0;
    if (is_platform_file(r->network))
        snprintf(cfg.platform, sizeof cfg.platform, "%s", r->network);
    else
        snprintf(cfg.bandwidth, sizeof cfg.bandwidth, "%s", r->network);
    if (ss_mkdir_p(cfg.out_dir) != SS_OK) return 1;
    char log[RUN_CONFIG_TEXT + 128];
    snprintf(log, sizeof log, "%s/log.txt", cfg.out_dir);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
    /* Runs side by side share the cores: one BLAS thread each. */
    if (serial_blas) openblas_set_num_threads(1);
    run_summary sum;
    int rc = run_emulation(&cfg, &sum, NULL);
    if (rc != SS_OK && rc != SS_EDIVERGED) fprintf(stderr, "syncsim: %s\n", ss_error_message());
    fflush(NULL);
    return ss_status_exit_code(rc);
}

static void read_back(compare_run *r) {
    run_record rec;
    if (run_record_read(r->dir, &rec) != SS_OK || !strcmp(rec.status, "failed")) return;
    snprintf(r->status, sizeof r->status, "%s", rec.status);
    r->accuracy = rec.test_accuracy;
    r->sim_time_s = rec.sim_time_s;
    r->lssr = rec.lssr;
    r->bytes_sent = rec.bytes_sent;
    r->dropped = rec.dropped_fraction;
    r->ok = 1;
}

/* First simulated time in DIR/metrics.csv at which test_accuracy >= target; < 0 if never. */
static double time_to_accuracy(const char *dir, double target) {
    double *t = NULL, *acc = NULL;
    size_t n = 0;
    if (run_curve_read(dir, &t, &acc, &n) != SS_OK) return -1;
    double tta = run_curve_tta_s(t, acc, n, target);
    free(t);
    free(acc);
    return tta;
}

static int write_compare_csv(const run_config *cfg, const compare_run *runs, int n) {
    char path[1024];
    outputs_path(cfg, "compare.csv", path, sizeof path);
    afile f;
    int rc = afile_open(&f, path);
    if (rc != SS_OK) return rc;
    fprintf(f.fp, "policy,platform,workers,test_accuracy,sim_time_s,tta_s,speedup_vs_bsp,lssr,"
                  "bytes_sent,dropped_fraction,status\n");
    for (int i = 0; i < n; i++) {
        const compare_run *r = &runs[i];
        if (!r->ok) {
            fprintf(f.fp, "%s,%s,%d,,,,,,,,%s\n", r->policy, r->label, cfg->workers,
                    r->pid ? "failed" : "not_run");
            continue;
        }
        fprintf(f.fp, "%s,%s,%d,%.6f,%.9f,", r->policy, r->label, cfg->workers, r->accuracy,
                r->sim_time_s);
        if (r->tta_s >= 0)
            fprintf(f.fp, "%.9f,", r->tta_s);
        else
            fputc(',', f.fp);
        if (r->speedup > 0)
            fprintf(f.fp, "%.6f,", r->speedup);
        else
            fputc(',', f.fp);
        fprintf(f.fp, "%.6f,%.0f,%.6f,%s\n", r->lssr, r->bytes_sent, r->dropped, r->status);
    }
    return afile_commit(&f);
}

/* gnuplot: accuracy against simulated time, one panel per network, a PNG and a terminal plot. */
static void plot(const run_config *cfg, const compare_run *runs, int n, char **nets, int n_nets) {
    char script[1024], png[1024];
    outputs_path(cfg, "compare.gp", script, sizeof script);
    outputs_path(cfg, "compare.png", png, sizeof png);
    afile f;
    if (afile_open(&f, script) != SS_OK) return;
    fprintf(f.fp, "# accuracy against simulated time; rerun: gnuplot %s\n", script);
    fprintf(f.fp, "set datafile separator ','\nset key bottom right\nset grid\n"
                  "set xlabel 'simulated time (s)'\nset ylabel 'test accuracy'\n");
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0)
            fprintf(f.fp, "set terminal pngcairo size %d,480 noenhanced\nset output '%s'\n",
                    640 * n_nets, png);
        else
            fprintf(f.fp, "set terminal dumb size 100,%d\nset output\n",
                    26 * n_nets > 60 ? 60 : 26 * n_nets);
        fprintf(f.fp, "set multiplot layout %d,%d\n", pass == 0 ? 1 : n_nets,
                pass == 0 ? n_nets : 1);
        for (int k = 0; k < n_nets; k++) {
            char label[64];
            network_label(nets[k], label, sizeof label);
            fprintf(f.fp, "set title '%d workers, %s'\nplot ", cfg->workers, label);
            int first = 1;
            for (int i = 0; i < n; i++) {
                if (!runs[i].ok || strcmp(runs[i].network, nets[k]) != 0) continue;
                fprintf(f.fp, "%s'%s/metrics.csv' every ::1 using 3:6 with linespoints title '%s'",
                        first ? "" : ", ", runs[i].dir, runs[i].policy);
                first = 0;
            }
            if (first) fprintf(f.fp, "0 notitle");
            fputc('\n', f.fp);
        }
        fprintf(f.fp, "unset multiplot\n");
    }
    if (afile_commit(&f) != SS_OK) return;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>/dev/null", script);
    fflush(stdout);
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "syncsim: gnuplot failed or is missing (install gnuplot-nox)\n");
}

int cmd_compare(const run_config *cfg_in) {
    run_config cfg = *cfg_in;
    char policies_text[RUN_CONFIG_TEXT], networks_text[RUN_CONFIG_TEXT];
    snprintf(policies_text, sizeof policies_text, "%s", cfg.policies);
    snprintf(networks_text, sizeof networks_text, "%s", cfg.networks);
    char *pols[16], *nets[16];
    int n_pols = split_list(policies_text, pols, 16), n_nets = split_list(networks_text, nets, 16);
    if (n_pols < 1 || n_nets < 1)
        return ss_error_set(SS_EUSAGE, "compare needs at least one policy (--policies) and one "
                                       "network (--networks)");
    if (n_pols * n_nets > COMPARE_MAX_RUNS)
        return ss_error_set(SS_EUSAGE, "compare: at most %d runs (%d policies x %d networks asked)",
                            COMPARE_MAX_RUNS, n_pols, n_nets);
    if (cfg.workers < 2) cfg.workers = 8;
    /* Check every point's policy before running any. */
    int rc = SS_OK;
    for (int p = 0; p < n_pols && rc == SS_OK; p++)
        rc = check_policy(pols[p]);
    if (rc != SS_OK) return rc;
    const char *baseline = policy_registry_baseline()->name;
    int have_bsp = 0;
    for (int p = 0; p < n_pols; p++)
        have_bsp |= !strcmp(pols[p], baseline);

    rc = outputs_begin(CMD_COMPARE, &cfg);
    if (rc != SS_OK) return rc;
    compare_run runs[COMPARE_MAX_RUNS];
    memset(runs, 0, sizeof runs);
    int n = 0;
    for (int k = 0; k < n_nets; k++)
        for (int p = 0; p < n_pols; p++, n++) {
            compare_run *r = &runs[n];
            snprintf(r->policy, sizeof r->policy, "%s", pols[p]);
            snprintf(r->network, sizeof r->network, "%s", nets[k]);
            network_label(nets[k], r->label, sizeof r->label);
            snprintf(r->dir, sizeof r->dir, "%s/runs/%s-%s", cfg.out_dir, r->policy, r->label);
            r->tta_s = -1;
        }

    printf("syncsim compare: %s, %s, %d workers, batch %d, %.3g epochs, seed %llu\n"
           "%d runs (%d at once), outputs in %s/runs/\n",
           cfg.model, cfg.dataset, cfg.workers, cfg.batch, cfg.epochs, (unsigned long long)cfg.seed,
           n, cfg.jobs, cfg.out_dir);
    fflush(stdout);
    outputs_install_interrupt_handler();
    const double t0 = outputs_wall_s();
    int next = 0, running = 0, done = 0;
    while (done < n) {
        while (running < cfg.jobs && next < n && !outputs_interrupted()) {
            compare_run *r = &runs[next++];
            fflush(NULL);
            r->pid = fork();
            if (r->pid < 0)
                return ss_error_set(SS_EIO, "compare: cannot fork: %s", strerror(errno));
            if (r->pid == 0) _exit(run_child(&cfg, r, cfg.jobs > 1));
            running++;
        }
        if (running == 0) break; /* interrupted before the rest started */
        int wstatus;
        pid_t pid = wait(&wstatus);
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < n; i++)
            if (runs[i].pid == pid) {
                runs[i].exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128;
                read_back(&runs[i]);
                printf("  [%d/%d] %-12s %-12s %s (%.0f s)\n", ++done, n, runs[i].policy,
                       runs[i].label, runs[i].ok ? runs[i].status : "FAILED, see log.txt",
                       outputs_wall_s() - t0);
                fflush(stdout);
            }
        running--;
    }

    /* TTA at BSP's final accuracy less 0.5 points, per network. */
    for (int k = 0; k < n_nets; k++) {
        const compare_run *bsp = NULL;
        for (int i = 0; i < n; i++)
            if (!strcmp(runs[i].network, nets[k]) && !strcmp(runs[i].policy, baseline) &&
                runs[i].ok)
                bsp = &runs[i];
        if (!bsp) continue;
        double target = bsp->accuracy - COMPARE_TARGET_MARGIN;
        double bsp_tta = time_to_accuracy(bsp->dir, target);
        for (int i = 0; i < n; i++) {
            if (strcmp(runs[i].network, nets[k]) != 0 || !runs[i].ok) continue;
            runs[i].tta_s = time_to_accuracy(runs[i].dir, target);
            runs[i].speedup = (runs[i].tta_s > 0 && bsp_tta > 0) ? bsp_tta / runs[i].tta_s : -1;
        }
    }

    printf("\n%-12s %-12s %9s %11s %11s %8s %6s %8s %8s\n", "policy", "network", "accuracy",
           "sim time", "TTA(BSP)", "speedup", "LSSR", "GB sent", "dropped");
    for (int i = 0; i < n; i++) {
        const compare_run *r = &runs[i];
        if (!r->ok && !r->pid) {
            printf("%-12s %-12s  not run (interrupted before it started)\n", r->policy, r->label);
            continue;
        }
        if (!r->ok) {
            printf("%-12s %-12s  failed (exit %d): see %s/log.txt\n", r->policy, r->label,
                   r->exit_code, r->dir);
            continue;
        }
        char note[32] = "";
        if (strcmp(r->status, "ok")) snprintf(note, sizeof note, " (%s)", r->status);
        char tta[32] = "never", speed[32] = "-";
        if (r->tta_s >= 0) snprintf(tta, sizeof tta, "%.2f s", r->tta_s);
        if (r->speedup > 0) snprintf(speed, sizeof speed, "%.2fx", r->speedup);
        printf("%-12s %-12s %9.4f %9.2f s %11s %8s %6.3f %8.3f %7.2f%%%s\n", r->policy, r->label,
               r->accuracy, r->sim_time_s, tta, speed, r->lssr, r->bytes_sent / 1e9,
               100.0 * r->dropped, note);
    }
    if (!have_bsp)
        printf("(no %s run: TTA and speedup need --policies to include %s)\n", baseline, baseline);
    printf("TTA(BSP): first simulated time at BSP's final accuracy minus %.1f points\n",
           COMPARE_TARGET_MARGIN * 100);
    if ((rc = write_compare_csv(&cfg, runs, n)) != SS_OK) return rc;
    plot(&cfg, runs, n, nets, n_nets);
    printf("outputs: %s/{compare.csv,compare.png,compare.gp,config.ini}, runs/*/ (wall %.0f s)\n",
           cfg.out_dir, outputs_wall_s() - t0);
    if (outputs_interrupted()) return SS_EINTERRUPT;
    int failed = 0;
    for (int i = 0; i < n; i++)
        failed += !runs[i].ok;
    if (failed) return ss_error_set(SS_EIO, "compare: %d of %d runs failed", failed, n);
    return SS_OK;
}
