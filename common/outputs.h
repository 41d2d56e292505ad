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
/* Removes the files `names` (NULL-terminated, relative to OUT) that an earlier run may have left,
 * before a run writes its own: a reused directory then never shows an old summary.json (status
 * ok) beside a new config.ini, or an old steps.trace beside a run without one. summary.json is
 * written last, so a run that fails or is killed leaves none: it counts as unfinished. Only these
 * names go, never other files; a missing file is fine. */
int outputs_clear(const run_config *cfg, const char *const *names);
/* SS_EUSAGE naming `option` when the input file `input` is one of the files a run writes in OUT
 * (summary.json, metrics.csv, steps.trace, config.ini, compare.csv, log.txt): clearing OUT would
 * delete it. OUT/platform.xml as an input is kept (outputs_is_generated). */
int outputs_check_input(const run_config *cfg, const char *option, const char *input);
/* 1 unless OUT/name is the platform file the user named (--platform OUT/platform.xml): only a
 * file the run generates under that name may be replaced. */
int outputs_is_generated(const run_config *cfg, const char *name);
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

/* SIGINT/SIGTERM/SIGHUP set a flag that long loops poll, so they stop cleanly and write their
 * outputs. */
void outputs_install_interrupt_handler(void);
int outputs_interrupted(void);

#endif
