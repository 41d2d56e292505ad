#include "analysis/plots.h"
#include "common/afile.h"
#include "common/csv.h"
#include "common/status.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *script_text(const char *name) {
    for (const plots_script *s = plots_scripts; s->name; s++)
        if (!strcmp(s->name, name)) return s->text;
    return NULL;
}

/* Writes OUT/NAME.gp once per report. */
static int write_script(const char *out_dir, const char *name) {
    const char *text = script_text(name);
    SS_ASSERT(text);
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.gp", out_dir, name);
    afile f;
    int rc = afile_open(&f, path);
    if (rc != SS_OK) return rc;
    fputs(text, f.fp);
    return afile_commit(&f);
}

/* Runs gnuplot -c SCRIPT DATA OUTPUT TERM [ARG4 [ARG5]] inside out_dir; stdout to `capture`
 * (a path, or NULL for /dev/null). No shell, so titles need no quoting. */
static int run_gnuplot(const char *out_dir, const char *name, const char *data, const char *output,
                       const char *term, const char *const *args, int n_args, const char *capture) {
    char script[256];
    snprintf(script, sizeof script, "%s.gp", name);
    const char *argv[12] = {"gnuplot", "-c", script, data, output, term, NULL};
    int argc = 6;
    for (int k = 0; k < n_args && argc < 11; k++)
        argv[argc++] = args[k];
    argv[argc] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return ss_error_set(SS_EIO, "cannot fork gnuplot: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(capture ? capture : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int null = open("/dev/null", O_WRONLY);
        if (chdir(out_dir) != 0) _exit(126);
        if (fd >= 0) dup2(fd, STDOUT_FILENO);
        if (null >= 0) dup2(null, STDERR_FILENO);
        execvp("gnuplot", (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return ss_error_set(SS_EIO, "waitpid: %s", strerror(errno));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return ss_error_set(SS_EIO, "gnuplot not found (install gnuplot-nox)");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return ss_error_set(SS_EIO,
                            "gnuplot failed on %s/%s.gp with %s (rerun it by hand to see why)",
                            out_dir, name, data);
    return SS_OK;
}

static int file_nonempty(const char *out_dir, const char *name) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", out_dir, name);
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* An argument as the shell reads it back: in single quotes, its own single quotes escaped. */
static void put_shell_arg(FILE *fp, const char *arg) {
    fputs(" '", fp);
    for (const char *p = arg; *p; p++)
        if (*p == '\'')
            fputs("'\\''", fp);
        else
            fputc(*p, fp);
    fputc('\'', fp);
}

static void append_replot(const char *out_dir, const char *name, const char *data, const char *base,
                          const char *const *args, int n_args) {
    char path[1200];
    snprintf(path, sizeof path, "%s/replot.sh", out_dir);
    int fresh = access(path, F_OK) != 0;
    FILE *fp = fopen(path, "a");
    if (!fp) return;
    if (fresh)
        fprintf(fp, "#!/bin/sh\n# Redraws the figures from their CSVs (terminal: png, svg "
                    "or dumb).\ncd \"$(dirname \"$0\")\"\n");
    for (int t = 0; t < 2; t++) {
        const char *term = t ? "svg" : "png";
        fprintf(fp, "gnuplot -c %s.gp", name);
        put_shell_arg(fp, data);
        fprintf(fp, " '%s.%s' %s", base, term, term);
        for (int k = 0; k < n_args; k++)
            put_shell_arg(fp, args[k]);
        fputc('\n', fp);
    }
    fclose(fp);
    chmod(path, 0755);
}

int plots_render_args(const char *out_dir, const char *name, const char *data, const char *base,
                      const char *const *args, int n_args, FILE *terminal) {
    SS_ASSERT(n_args >= 0 && n_args <= 5);
    int rc = write_script(out_dir, name);
    if (rc != SS_OK) return rc;
    static const char *const terms[] = {"png", "svg"};
    for (int t = 0; t < 2; t++) {
        /* gnuplot writes a temporary name, renamed once the figure is whole; a failed figure
         * leaves no file */
        char output[256], part[280], from[1600], to[1600];
        snprintf(output, sizeof output, "%s.%s", base, terms[t]);
        snprintf(part, sizeof part, ".%s.part", output);
        snprintf(from, sizeof from, "%s/%s", out_dir, part);
        snprintf(to, sizeof to, "%s/%s", out_dir, output);
        rc = run_gnuplot(out_dir, name, data, part, terms[t], args, n_args, NULL);
        if (rc == SS_OK && !file_nonempty(out_dir, part))
            rc = ss_error_set(SS_EIO, "gnuplot wrote no %s", to);
        if (rc == SS_OK && rename(from, to) != 0)
            rc = ss_error_set(SS_EIO, "cannot rename %s to %s: %s", from, to, strerror(errno));
        if (rc != SS_OK) {
            unlink(from);
            return rc;
        }
    }
    append_replot(out_dir, name, data, base, args, n_args);
    if (!terminal) return SS_OK;
    char capture[1200];
    snprintf(capture, sizeof capture, "%s/%s.txt", out_dir, base);
    if ((rc = run_gnuplot(out_dir, name, data, "", "dumb", args, n_args, capture)) != SS_OK)
        return rc;
    FILE *fp = fopen(capture, "r");
    if (fp) {
        char line[512];
        while (fgets(line, sizeof line, fp))
            fputs(line, terminal);
        fclose(fp);
    }
    return SS_OK;
}

int plots_render(const char *out_dir, const char *name, const char *data, const char *base,
                 const char *arg4, const char *arg5, FILE *terminal) {
    const char *args[2] = {arg4, arg5};
    return plots_render_args(out_dir, name, data, base, args, arg4 ? (arg5 ? 2 : 1) : 0, terminal);
}

/* ---- policy styles ---- */

static const struct {
    const char *policy, *colour;
    char mark;
} policy_styles[] = {{"bsp", "#000000", 'B'},     {"ssp", "#CC79A7", 'P'},
                     {"asp", "#56B4E9", 'A'},     {"fedavg", "#009E73", 'F'},
                     {"selsync", "#D55E00", 'S'}, {"dssync", "#0072B2", 'D'},
                     {"single", "#E69F00", '1'}};
#define N_POLICY_STYLES ((int)(sizeof policy_styles / sizeof policy_styles[0]))

/* The row of a policy's base name ("selsync-dlcp": selsync); *variant: 1 for "-dlcp". */
static int policy_style_row(const char *policy, int *variant) {
    size_t len = strlen(policy);
    *variant = len > 5 && !strcmp(policy + len - 5, "-dlcp");
    if (*variant) len -= 5;
    for (int i = 0; i < N_POLICY_STYLES; i++)
        if (strlen(policy_styles[i].policy) == len &&
            !strncmp(policy_styles[i].policy, policy, len))
            return i;
    return -1;
}

const char *plots_policy_colour(const char *policy) {
    int variant;
    const int i = policy_style_row(policy, &variant);
    return i < 0 ? "#808080" : policy_styles[i].colour;
}

char plots_policy_mark(const char *policy) {
    int variant;
    const int i = policy_style_row(policy, &variant);
    if (i < 0) return '?';
    const char m = policy_styles[i].mark;
    return variant && m >= 'A' && m <= 'Z' ? (char)(m - 'A' + 'a') : m;
}

void plots_styles(const char *const *policies, int n, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len < size; i++) {
        int variant, dash = 1;
        const int row = policy_style_row(policies[i], &variant);
        for (int j = 0; j < i; j++) { /* earlier curves of the same base policy */
            int v;
            if (policy_style_row(policies[j], &v) == row) dash++;
        }
        if (dash > 9) dash = 9;
        len += (size_t)snprintf(buf + len, size - len, "%s%s:%c:%d", i ? " " : "",
                                plots_policy_colour(policies[i]), plots_policy_mark(policies[i]),
                                dash);
    }
}

/* Appends the block of one curve: "sim_time_s,TITLE", then its (sim_time_s, column) cells as
 * metrics.csv has them. 0 if the run has no readable curve (nothing written). */
static int write_curve(FILE *out, const plots_curve *c, const char *column, int first) {
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.csv", c->dir);
    csv_reader r;
    int got;
    if (csv_open(&r, path) != SS_OK) return 0;
    int rc = csv_next(&r, &got);
    const int ct = got ? csv_find(&r, "sim_time_s") : -1;
    const int ca = got ? csv_find(&r, column) : -1;
    if (rc != SS_OK || ct < 0 || ca < 0) {
        csv_close(&r);
        return 0;
    }
    fputs(first ? "sim_time_s," : "\n\nsim_time_s,", out);
    csv_write_field(out, c->title);
    fputc('\n', out);
    while (csv_next(&r, &got) == SS_OK && got)
        if (r.n_fields > ct && r.n_fields > ca && r.field[ct][0] && r.field[ca][0])
            fprintf(out, "%s,%s\n", r.field[ct], r.field[ca]); /* empty: no value, no point */
    csv_close(&r);
    return 1;
}

int plots_accuracy_panels(const char *out_dir, const char *base, const plots_curve *curves, int n,
                          const char *const *panel_titles, int n_panels, const char *title,
                          FILE *terminal) {
    return plots_metric_panels(out_dir, base, curves, n, panel_titles, n_panels, title,
                               "test_accuracy", terminal);
}

int plots_metric_panels(const char *out_dir, const char *base, const plots_curve *curves, int n,
                        const char *const *panel_titles, int n_panels, const char *title,
                        const char *column, FILE *terminal) {
    char data[256], path[1200];
    snprintf(data, sizeof data, "%s-curves.csv", base);
    snprintf(path, sizeof path, "%s/%s", out_dir, data);
    afile f;
    int rc = afile_open(&f, path);
    if (rc != SS_OK) return rc;
    /* gnuplot's word() reads the panel counts and the titles (double-quoted) back */
    char counts[1024] = "", titles[4096] = "";
    size_t lc = 0, lt = 0;
    int blocks = 0;
    const char **written = ss_calloc((size_t)(n ? n : 1), sizeof *written);
    char styles[4096] = "";
    size_t ls = 0;
    for (int k = 0; k < n_panels; k++) {
        int in_panel = 0;
        for (int i = 0; i < n; i++)
            if (curves[i].panel == k &&
                write_curve(f.fp, &curves[i], column, blocks + in_panel == 0))
                written[blocks + in_panel++] = curves[i].title;
        /* styles panel by panel: a policy's dash type counts its curves within its panel */
        if (in_panel && ls < sizeof styles - 1) {
            if (ls) styles[ls++] = ' ';
            plots_styles(written + blocks, in_panel, styles + ls, sizeof styles - ls);
            ls += strlen(styles + ls);
        }
        blocks += in_panel;
        lc += (size_t)snprintf(counts + lc, lc < sizeof counts ? sizeof counts - lc : 0, "%s%d",
                               k ? " " : "", in_panel);
        lt += (size_t)snprintf(titles + lt, lt < sizeof titles ? sizeof titles - lt : 0, "%s\"%s\"",
                               k ? " " : "", panel_titles[k]);
    }
    free(written);
    if ((rc = afile_commit(&f)) != SS_OK) return rc;
    if (lc >= sizeof counts || lt >= sizeof titles)
        return ss_error_set(SS_EUSAGE, "%s: too many panels or too long titles", path);
    /* a perplexity figure names its axis (ARG8); an accuracy figure's command stays as it was */
    const int perplexity = !strcmp(column, "test_perplexity");
    const char *args[5] = {counts, titles, styles, title ? title : "", "perplexity"};
    return plots_render_args(out_dir, "compare", data, base, args, perplexity ? 5 : 4, terminal);
}
