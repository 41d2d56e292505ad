/* Run outputs shared by the runners: the output directory with its config.ini, JSON files, the
 * progress bar, the interrupt flag and the wall clock. Every file is written through
 * common/afile.h (temporary name, then rename), so an interrupted run never leaves a file that
 * looks finished. config.ini comes as text: only the option table (cli/options.h) writes it.
 *
 *     if ((rc = outputs_open_dir(cfg, ini_text)) != SS_OK) return rc;   // OUT/, OUT/config.ini
 *     char path[1024]; outputs_path(cfg, "metrics.csv", path, sizeof path);
 */
#ifndef SS_COMMON_OUTPUTS_H
#define SS_COMMON_OUTPUTS_H

#include "common/run_config.h"
#include "common/afile.h"

#include <cjson/cJSON.h>
#include <stdio.h>

/* Creates cfg->out_dir and writes config_ini to OUT/config.ini (NULL: no config.ini). */
int outputs_open_dir(const run_config *cfg, const char *config_ini);
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
