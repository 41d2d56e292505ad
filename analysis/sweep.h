/* Parameter sweeps: a grid of runs described by an INI file.
 *
 *     [sweep]
 *     name = selsync-delta          ; label only
 *     out = sweeps/selsync-delta    ; output directory (--out overrides it)
 *     command = train               ; train (emulation, default) or replay
 *     [grid]                        ; every key is an axis: a list of values
 *     policy = bsp,selsync
 *     bandwidth = 5Gbps,100Gbps
 *     delta = 0.05,0.3
 *     seed = 1,2,3
 *     model = logreg;mlp:128,64     ; values that hold commas are separated by ';'
 *     [fixed]                       ; single values given to every point
 *     dataset = synthetic
 *     epochs = 0.2
 *
 * Every key of [grid] and [fixed] is an option of `syncsim COMMAND` (the option table validates
 * names and values, with the file and line of a bad one). Points are the product of the axes, the
 * first axis outermost. An option limited to some policies (delta, staleness, local-steps...)
 * applies only to the points of those policies: other points omit it from their options and from
 * their directory name, so the points that then coincide run once. Each point runs in
 * OUT/points/<axis=value,...>/ with the options of `syncsim COMMAND` (its config.ini re-runs it);
 * a point whose options contradict each other is reported as invalid and the others still run.
 */
#ifndef SS_CLI_SWEEP_H
#define SS_CLI_SWEEP_H

#include "common/run_config.h"

#define SWEEP_MAX_AXES   16
#define SWEEP_MAX_VALUES 64
#define SWEEP_MAX_POINTS 4096

typedef struct sweep_point {
    char name[512]; /* directory name under OUT/points/ */
    int argc;       /* options of `syncsim COMMAND`, --out included */
    char **argv;    /* malloc'ed */
    int valid;      /* 0: its options contradict each other (error says how) */
    char error[512];
    int value_of[SWEEP_MAX_AXES]; /* index of each axis's value; -1: the axis does not apply */
} sweep_point;

typedef struct sweep_plan {
    char path[RUN_CONFIG_TEXT]; /* the sweep file */
    char name[128];
    char out_dir[RUN_CONFIG_TEXT];
    unsigned command; /* CMD_TRAIN or CMD_REPLAY */
    int n_axes;
    char axis_key[SWEEP_MAX_AXES][40];
    int n_values[SWEEP_MAX_AXES];
    char *values[SWEEP_MAX_AXES][SWEEP_MAX_VALUES]; /* malloc'ed */
    int n_fixed;
    char fixed_key[RUN_CONFIG_MAX_OPTIONS][40];
    char fixed_value[RUN_CONFIG_MAX_OPTIONS][RUN_CONFIG_TEXT];
    int n_points;
    int merged; /* grid combinations that coincided with an earlier point */
    sweep_point *points;
} sweep_plan;

/* Reads and checks the sweep file and expands its points. Bad file: SS_EUSAGE with
 * "FILE:LINE: ..." (an unknown key names the closest valid one). out_dir overrides [sweep] out
 * when not NULL. */
int sweep_plan_load(const char *path, const char *out_dir, sweep_plan **out);
void sweep_plan_free(sweep_plan *p);
/* The directory of point i: OUT/points/NAME. */
void sweep_point_dir(const sweep_plan *p, int i, char *buf, size_t n);
/* Writes OUT/sweep.csv: one row per point in order, its axis values, status (ok, diverged,
 * interrupted, failed, invalid, pending) and final metrics. */
int sweep_gather(const sweep_plan *p, int *n_bad, int *n_pending);

#endif
