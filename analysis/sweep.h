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
 *
 * The option table belongs to the caller (the command line): it hands its checks in through
 * sweep_options.
 *
 *     sweep_plan *p; if (sweep_plan_load("grid.ini", NULL, &my_options, &p) != SS_OK) ...
 *     ... run each p->points[i].argv in sweep_point_dir(p, i, ...) ...
 *     int bad, pending; sweep_gather(p, &bad, &pending); sweep_plan_free(p);
 */
#ifndef SS_ANALYSIS_SWEEP_H
#define SS_ANALYSIS_SWEEP_H

#include "common/run_config.h"

#include <stddef.h>

#define SWEEP_MAX_AXES   16
#define SWEEP_MAX_VALUES 64
#define SWEEP_MAX_POINTS 4096

/* The caller's option table, as the sweep file needs it. `command` is always `train` or `replay`;
 * the policy bits are the caller's too (0 in *policies: the option applies to every policy). */
typedef struct sweep_options {
    unsigned train, replay; /* the bits of `syncsim train` and `syncsim replay` */
    /* 1 if `name` is an option of `command` (its policy bits in *policies unless NULL), else 0 */
    int (*lookup)(unsigned command, const char *name, unsigned *policies);
    /* The option name of `command` closest to `name`, or NULL if none is close */
    const char *(*closest)(unsigned command, const char *name);
    /* SS_OK, or SS_EUSAGE with a message naming the key and the valid values */
    int (*check_value)(unsigned command, const char *name, const char *value);
    /* The policy bit of a point from its policy ("" when it sets none) and its workers */
    unsigned (*policy_bit)(const char *policy, int workers);
    /* SS_OK if a point's options (argv of `syncsim COMMAND`) hold together, else the status with
     * the message set */
    int (*check_point)(unsigned command, int argc, char **argv);
} sweep_options;

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
    unsigned command; /* sweep_options train or replay */
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
    const sweep_options *opts; /* as loaded with (which keys apply to which policy) */
} sweep_plan;

/* Reads and checks the sweep file against opts and expands its points. Bad file: SS_EUSAGE with
 * "FILE:LINE: ..." (an unknown key names the closest valid one). out_dir overrides [sweep] out
 * when not NULL. */
int sweep_plan_load(const char *path, const char *out_dir, const sweep_options *opts,
                    sweep_plan **out);
/* The same from the bytes text[0..size) of a sweep file already in memory (NUL bytes read as a
 * file's would be): `path` only names it in messages and gives the plan's default name. The
 * fuzz target (tests/fuzz/fuzz_sweep.c) reads its inputs through it. */
int sweep_plan_load_mem(const char *path, const char *text, size_t size, const char *out_dir,
                        const sweep_options *opts, sweep_plan **out);
void sweep_plan_free(sweep_plan *p);
/* The directory of point i: OUT/points/NAME. */
void sweep_point_dir(const sweep_plan *p, int i, char *buf, size_t n);
/* Writes OUT/sweep.csv: one row per point in order, its axis values, status (ok, diverged,
 * interrupted, failed, invalid, pending) and final metrics (from each point's summary.json,
 * common/summary.h); tta_s and speedup_vs_bsp against the point's BSP point of the same
 * configuration and seed, as `report` and `compare` measure them (analysis/tta.h), with the
 * reason when undefined in `tta`; target_tta_s: summary.json's time to --target-accuracy. */
int sweep_gather(const sweep_plan *p, int *n_bad, int *n_pending);

#endif
