#include "common/outputs.h"
#include "common/status.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void outputs_path(const run_config *cfg, const char *name, char *buf, size_t n) {
    snprintf(buf, n, "%s/%s", cfg->out_dir, name);
}

int outputs_open_dir(const run_config *cfg, const char *config_ini) {
    int rc = ss_mkdir_p(cfg->out_dir);
    if (rc != SS_OK || !config_ini) return rc;
    char path[1024];
    outputs_path(cfg, "config.ini", path, sizeof path);
    afile f;
    if ((rc = afile_open(&f, path)) != SS_OK) return rc;
    fputs(config_ini, f.fp);
    return afile_commit(&f);
}

int outputs_clear(const run_config *cfg, const char *const *names) {
    char path[1024];
    for (int i = 0; names[i]; i++) {
        outputs_path(cfg, names[i], path, sizeof path);
        if (unlink(path) != 0 && errno != ENOENT)
            return ss_error_set(SS_EIO, "cannot remove the earlier run's %s: %s", path,
                                strerror(errno));
    }
    return SS_OK;
}

int outputs_check_input(const run_config *cfg, const char *option, const char *input) {
    static const char *const written[] = {
        "summary.json", "metrics.csv", "steps.trace", "config.ini", "compare.csv", "log.txt", NULL};
    struct stat in, out;
    if (!input[0] || stat(input, &in) != 0) return SS_OK; /* the reader names a missing file */
    char path[1024];
    for (int i = 0; written[i]; i++) {
        outputs_path(cfg, written[i], path, sizeof path);
        if (stat(path, &out) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
            return ss_error_set(SS_EUSAGE,
                                "%s %s: this is %s, an output this run replaces; copy it out of "
                                "%s or give another --out",
                                option, input, path, cfg->out_dir);
    }
    return SS_OK;
}

int outputs_is_generated(const run_config *cfg, const char *name) {
    if (!cfg->platform[0]) return 1;
    char path[1024];
    outputs_path(cfg, name, path, sizeof path);
    struct stat a, b;
    if (stat(path, &a) != 0 || stat(cfg->platform, &b) != 0) return 1;
    return !(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

int outputs_write_json(const run_config *cfg, const char *name, const cJSON *json) {
    char path[1024];
    outputs_path(cfg, name, path, sizeof path);
    char *text = cJSON_Print(json);
    if (!text) return ss_error_set(SS_ENOMEM, "cannot format %s", path);
    afile f;
    int rc = afile_open(&f, path);
    if (rc == SS_OK) {
        fputs(text, f.fp);
        fputc('\n', f.fp);
        rc = afile_commit(&f);
    }
    free(text);
    return rc;
}

double outputs_wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void progress_begin(progress *p, int setting, long total) {
    p->enabled = setting < 0 ? isatty(STDERR_FILENO) : setting;
    p->total = total > 0 ? total : 1;
    p->last_draw = 0;
}

void progress_update(progress *p, long done, const char *fmt, ...) {
    if (!p->enabled) return;
    double now = outputs_wall_s();
    if (done < p->total && now - p->last_draw < 0.2) return;
    p->last_draw = now;
    const int width = 30;
    int filled = (int)((double)width * (double)done / (double)p->total);
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    char text[160] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\r[%s] %3d%% %s\033[K", bar, (int)(100.0 * (double)done / (double)p->total),
            text);
    fflush(stderr);
}

void progress_end(progress *p) {
    if (p->enabled) fputc('\n', stderr);
}

static volatile sig_atomic_t interrupted_flag;

static void on_signal(int sig) {
    (void)sig;
    interrupted_flag = 1;
}

void outputs_install_interrupt_handler(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* a closed terminal: stop as cleanly, leave no .tmp file */
}

int outputs_interrupted(void) {
    return interrupted_flag != 0;
}
