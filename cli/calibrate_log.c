/* `syncsim calibrate network`: reading the nccl-tests logs (see calibrate_network.h). */
#include "cli/calibrate_network.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/number.h"
#include "common/status.h"

/* ---- the log ---- */

#define CALIB_MAX_TOKENS 24
#define CALIB_MAX_HOSTS  8192

static int tokenize(char *line, char **tok) {
    int n = 0;
    for (char *s = strtok(line, " \t\r\n"); s && n < CALIB_MAX_TOKENS; s = strtok(NULL, " \t\r\n"))
        tok[n++] = s;
    return n;
}

static int all_digits(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

static int type_bytes(const char *type) {
    static const struct {
        const char *name;
        int bytes;
    } types[] = {{"float", 4},  {"float32", 4}, {"half", 2},     {"float16", 2}, {"bfloat16", 2},
                 {"double", 8}, {"float64", 8}, {"int32", 4},    {"uint32", 4},  {"int", 4},
                 {"int64", 8},  {"uint64", 8},  {"int8", 1},     {"uint8", 1},   {"char", 1},
                 {"f8e4m3", 1}, {"f8e5m2", 1},  {"fp8_e4m3", 1}, {"fp8_e5m2", 1}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(type, types[i].name)) return types[i].bytes;
    return 0;
}

/* "PATH@NxG" -> nodes, gpus; 0 when arg has no @ suffix. */
static int split_shape(const char *arg, char *path, size_t n, int *nodes, int *gpus) {
    const char *at = strrchr(arg, '@');
    *nodes = *gpus = 0;
    if (!at) {
        snprintf(path, n, "%s", arg);
        return SS_OK;
    }
    snprintf(path, n, "%.*s", (int)(at - arg), arg);
    long a, b;
    char na[32], nb[32];
    const char *x = strchr(at + 1, 'x');
    if (!x || x - at - 1 >= (long)sizeof na || strlen(x + 1) >= sizeof nb)
        return ss_error_set(SS_EUSAGE,
                            "calibrate network: '%s': expected LOG or LOG@NxG (N nodes of G GPUs, "
                            "e.g. run2.txt@2x8)",
                            arg);
    snprintf(na, sizeof na, "%.*s", (int)(x - at - 1), at + 1);
    snprintf(nb, sizeof nb, "%s", x + 1);
    if (number_parse_long(na, 1, 8192, &a) || number_parse_long(nb, 1, 1024, &b) || a * b < 2)
        return ss_error_set(SS_EUSAGE,
                            "calibrate network: '%s': N and G of @NxG must be integers, N in "
                            "[1, 8192], G in [1, 1024], N x G >= 2",
                            arg);
    *nodes = (int)a;
    *gpus = (int)b;
    return SS_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int calib_log_parse(const char *arg, calib_log *out) {
    memset(out, 0, sizeof *out);
    int want_nodes, want_gpus, st;
    if ((st = split_shape(arg, out->path, sizeof out->path, &want_nodes, &want_gpus))) return st;
    const char *file = out->path;
    FILE *fp = fopen(file, "r");
    if (!fp)
        return ss_error_set(SS_EINPUT, "calibrate network: cannot open %s: %s", file,
                            strerror(errno));
    char buf[4096], copy[4096];
    char **hosts = ss_malloc(sizeof *hosts * CALIB_MAX_HOSTS);
    int n_hosts = 0, max_rank = -1, root_col = -1;
    long line = 0;
    st = SS_OK;
    while (st == SS_OK && fgets(buf, sizeof buf, fp)) {
        line++;
        snprintf(copy, sizeof copy, "%s", buf);
        char *tok[CALIB_MAX_TOKENS];
        char *s = buf;
        while (*s == ' ' || *s == '\t')
            s++;
        /* srun -l prefixes every line with its task: "0: " */
        char *colon = s + strspn(s, "0123456789");
        if (colon > s && colon[0] == ':' &&
            (colon[1] == ' ' || colon[1] == '\t' || !colon[1] || colon[1] == '\n')) {
            s = colon + 1;
            while (*s == ' ' || *s == '\t')
                s++;
        }
        int comment = *s == '#';
        int n = tokenize(comment ? s + 1 : s, tok);
        if (n == 0) continue;
        if (comment) {
            /* "#  Rank  0 Group  0 Pid  28307 on  gpu59 device  0 [0x16] NVIDIA ..." */
            if (!strcmp(tok[0], "Rank") && n >= 4 && all_digits(tok[1])) {
                int on = -1;
                for (int i = 2; i + 1 < n; i++)
                    if (!strcmp(tok[i], "on")) {
                        on = i;
                        break;
                    }
                if (on < 0) continue;
                int r = atoi(tok[1]);
                if (r > max_rank) max_rank = r;
                int known = 0;
                for (int h = 0; h < n_hosts && !known; h++)
                    known = !strcmp(hosts[h], tok[on + 1]);
                if (!known && n_hosts < CALIB_MAX_HOSTS) hosts[n_hosts++] = strdup(tok[on + 1]);
            }
            /* the header of the table: is there a root column? */
            for (int i = 0; i + 1 < n; i++)
                if (!strcmp(tok[i], "redop")) root_col = !strcmp(tok[i + 1], "root");
            continue;
        }
        if (!all_digits(tok[0])) continue; /* NCCL INFO lines, mpirun's messages, ... */
        /* size count type redop [root] time algbw busbw #wrong|error time algbw busbw ... */
        /* without the header: 13 columns have a root, 12 not; a cut row has one if its fifth
         * is the root's integer ("-1") */
        int has_root = root_col >= 0 ? root_col
                       : n >= 13     ? 1
                       : n == 12     ? 0
                                     : n > 4 && (!strcmp(tok[4], "-1") || all_digits(tok[4]));
        int t = 4 + has_root;
        double size = NAN, count = NAN, time_us = NAN, algbw = NAN;
        int tb = n > 2 ? type_bytes(tok[2]) : 0;
        if (n < t + 3 || number_parse_double(tok[0], &size) ||
            number_parse_double(tok[1], &count) || !tb || !strcmp(tok[3], "none") ||
            number_parse_double(tok[t], &time_us) || number_parse_double(tok[t + 1], &algbw) ||
            !(size >= 1) || !(time_us > 0)) {
            copy[strcspn(copy, "\r\n")] = '\0';
            st = ss_error_set(SS_EINPUT,
                              "%s:%ld: not a row of all_reduce_perf's table (size count type "
                              "redop [root] time algbw busbw ...; a known type, a reduction, a "
                              "time > 0): '%.80s'",
                              file, line, copy);
        } else if (fabs(count * tb - size) > 0.5 ||
                   (algbw >= 1 && fabs(size / time_us / 1e3 - algbw) > 0.02 * algbw + 0.01)) {
            st =
                ss_error_set(SS_EINPUT,
                             "%s:%ld: the row disagrees with itself (count x %d bytes = %.0f, size "
                             "%.0f; size / time = %.2f GB/s, algbw %.2f)",
                             file, line, tb, count * tb, size, size / time_us / 1e3, algbw);
        } else if (out->n == CALIB_MAX_SIZES) {
            st = ss_error_set(SS_EINPUT, "%s:%ld: more than %d rows", file, line, CALIB_MAX_SIZES);
        } else {
            for (int i = 0; i < out->n; i++)
                if (out->size_bytes[i] == size)
                    st = ss_error_set(SS_EINPUT,
                                      "%s:%ld: size %.0f again (line %ld): one table per log", file,
                                      line, size, out->line[i]);
            out->size_bytes[out->n] = size;
            out->time_us[out->n] = time_us;
            out->line[out->n++] = line;
        }
    }
    int read_error = ferror(fp);
    fclose(fp);
    qsort(hosts, (size_t)n_hosts, sizeof *hosts, cmp_str);
    for (int h = 0; h < n_hosts; h++)
        free(hosts[h]);
    free(hosts);
    if (st) return st;
    if (read_error) return ss_error_set(SS_EINPUT, "calibrate network: cannot read %s", file);
    if (out->n == 0)
        return ss_error_set(SS_EINPUT,
                            "%s: no result table (rows of all_reduce_perf: size count type redop "
                            "[root] time algbw busbw ...)",
                            file);
    if (max_rank >= 0) {
        out->ranks = max_rank + 1;
        out->nodes = n_hosts;
        if (want_nodes && (want_nodes != out->nodes || want_nodes * want_gpus != out->ranks))
            return ss_error_set(SS_EINPUT,
                                "%s: its Rank lines give %d ranks on %d nodes, not %dx%d as "
                                "given",
                                file, out->ranks, out->nodes, want_nodes, want_gpus);
        if (out->ranks % out->nodes)
            return ss_error_set(SS_EINPUT,
                                "%s: %d ranks on %d nodes: not the same number of GPUs on each "
                                "(the generator's nodes are alike)",
                                file, out->ranks, out->nodes);
    } else if (want_nodes) {
        out->nodes = want_nodes;
        out->ranks = want_nodes * want_gpus;
    } else {
        return ss_error_set(SS_EINPUT,
                            "%s: no '# Rank R ... on HOST device D' lines, so its ranks and nodes "
                            "are not known: give them as %s@NxG (N nodes of G GPUs)",
                            file, file);
    }
    out->gpus_per_node = out->ranks / out->nodes;
    if (out->ranks < 2)
        return ss_error_set(SS_EINPUT, "%s: one rank: an all-reduce needs two", file);
    return SS_OK;
}
