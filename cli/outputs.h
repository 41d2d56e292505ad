/* Run outputs shared by the subcommands: the output directory, config.ini, metrics.csv rows,
 * summary.json, and the progress bar. Every file is written through common/afile.h (temporary
 * name, then rename), so an interrupted run never leaves a file that looks finished. */
#ifndef SS_CLI_OUTPUTS_H
#define SS_CLI_OUTPUTS_H

#include "common/run_config.h"
#include "common/afile.h"

#include <cjson/cJSON.h>
#include <stdio.h>

/* Creates cfg->out_dir and writes OUT/config.ini for `command` (a CMD_* bit). */
int outputs_begin(unsigned command, const run_config *cfg);
/* Joins the output directory and a file name into buf. */
void outputs_path(const run_config *cfg, const char *name, char *buf, size_t n);
/* Writes a cJSON object to OUT/name atomically (pretty-printed). */
int outputs_write_json(const run_config *cfg, const char *name, const cJSON *json);

/* A progress bar on stderr, drawn only when enabled (cfg->progress, or a terminal for auto). */
typedef struct progress {
    int enabled;
    long total;       /* units of work, e.g. steps */
    double last_draw; /* wall time of the last redraw (s) */
} progress;
void progress_begin(progress *p, int setting, long total);
void progress_update(progress *p, long done, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void progress_end(progress *p);

/* Wall-clock seconds (monotonic). */
double outputs_wall_s(void);

/* SIGINT/SIGTERM set a flag that long loops poll, so they stop cleanly and write their outputs. */
void outputs_install_interrupt_handler(void);
int outputs_interrupted(void);

#endif
