/* summary.json (common/summary.h): the same keys in every mode, null for what a mode lacks, a
 * schema version, and a reader that gives back what the writer wrote (and reads the files of
 * before the schema). */
#include "common/afile.h"
#include "common/status.h"
#include "common/summary.h"
#include "ss_test.h"

#include <string.h>
#include <unistd.h>

static char dir[256];

static run_config out_config(void) {
    run_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.out_dir, sizeof cfg.out_dir, "%s", dir);
    return cfg;
}

static int has_line(const char *path, const char *text) {
    FILE *fp = fopen(path, "r");
    if (!fp) return 0;
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, fp))
        found = strstr(line, text) != NULL;
    fclose(fp);
    return found;
}

static void test_round_trip(void) {
    run_config cfg = out_config();
    run_summary s;
    run_summary_init(&s);
    snprintf(s.status, sizeof s.status, "ok");
    snprintf(s.mode, sizeof s.mode, "emulation");
    snprintf(s.policy, sizeof s.policy, "ssp");
    s.workers = 4;
    s.test_accuracy = 0.8125;
    s.sim_time_s = 1.5;
    s.steps = 70;
    s.sync_steps = 12;
    s.seed = 7;
    s.clock_gap_bins = 3;
    s.clock_gap_hist[0] = 5, s.clock_gap_hist[2] = 9;
    CU_ASSERT_EQUAL(summary_write(&cfg, &s), SS_OK);
    char path[300];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    CU_ASSERT(has_line(path, "\"schema\":\t1"));
    CU_ASSERT(has_line(path, "\"tta_s\":\tnull"));
    CU_ASSERT(has_line(path, "\"wall_s\":\tnull"));
    CU_ASSERT(has_line(path, "\"dataset\":\tnull"));
    run_summary back;
    CU_ASSERT_EQUAL(summary_read(path, &back), SS_OK);
    CU_ASSERT_STRING_EQUAL(back.status, "ok");
    CU_ASSERT_STRING_EQUAL(back.policy, "ssp");
    CU_ASSERT_EQUAL(back.workers, 4);
    CU_ASSERT_EQUAL(back.test_accuracy, 0.8125);
    CU_ASSERT_EQUAL(back.steps, 70);
    CU_ASSERT_EQUAL(back.sync_steps, 12);
    CU_ASSERT_EQUAL(back.seed, 7);
    CU_ASSERT(back.tta_s < 0);
    CU_ASSERT(isnan(back.wall_s) && isnan(back.test_loss));
    CU_ASSERT_EQUAL(back.batch, -1);
    CU_ASSERT_EQUAL(back.dataset[0], '\0');
    CU_ASSERT_EQUAL(back.clock_gap_bins, 3);
    CU_ASSERT_EQUAL(back.clock_gap_hist[2], 9);
    CU_ASSERT_EQUAL(back.update_staleness_bins, 0);
}

static void write_text(const char *path, const char *text) {
    FILE *fp = fopen(path, "w");
    SS_ASSERT(fp);
    fputs(text, fp);
    fclose(fp);
}

static void test_old_and_bad_files(void) {
    char path[300];
    snprintf(path, sizeof path, "%s/old.json", dir);
    write_text(path, "{\"status\": \"ok\", \"mode\": \"single\", \"wall_time_s\": 2.5}\n");
    run_summary s;
    CU_ASSERT_EQUAL(summary_read(path, &s), SS_OK);
    CU_ASSERT_STRING_EQUAL(s.mode, "single");
    CU_ASSERT_EQUAL(s.wall_s, 2.5);
    write_text(path, "{\"schema\": 2, \"status\": \"ok\"}\n");
    CU_ASSERT_EQUAL(summary_read(path, &s), SS_EINPUT);
    write_text(path, "[1, 2]\n");
    CU_ASSERT_EQUAL(summary_read(path, &s), SS_EINPUT);
    snprintf(path, sizeof path, "%s/missing.json", dir);
    CU_ASSERT_EQUAL(summary_read(path, &s), SS_EINPUT);
}

static int suite_init(void) {
    snprintf(dir, sizeof dir, "%s/test_summary_%d", SS_BINARY_DIR, (int)getpid());
    return ss_mkdir_p(dir) == SS_OK ? 0 : 1;
}

static int suite_clean(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}

static CU_TestInfo summary_tests[] = {
    {"summary_write / summary_read: schema, nulls, values back", test_round_trip},
    {"summary_read: files without a schema, newer schemas, not an object", test_old_and_bad_files},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"summary.json", suite_init, suite_clean, NULL, NULL, summary_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}
