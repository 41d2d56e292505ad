/* CUnit suite of the policy registry (sim/policy/policy_registry.h), the builder
 * (sim/policy/policy_build.h) and the policy codec (sim/policy/policy_codec.h): every policy's
 * configuration survives the codec, every policy option is a row of --help with the registry's
 * applicability, defaults agree, and unknown names list the valid ones. */
#include "ss_test.h"

#include "cli/options.h"
#include "common/status.h"
#include "sim/policy/policy_build.h"
#include "sim/policy/policy_codec.h"
#include "sim/policy/policy_registry.h"

#include <stdlib.h>
#include <string.h>

/* A value of option `o` other than its default, as text. */
static void other_value(const policy_option *o, char *buf, size_t n) {
    switch (o->type) {
    case POLICY_OPTION_INT:
    case POLICY_OPTION_LONG:
        snprintf(buf, n, "%.0f", o->min + 1 == atof(o->def) ? o->min + 2 : o->min + 1);
        break;
    case POLICY_OPTION_DOUBLE:
    case POLICY_OPTION_THRESHOLD: /* a number, or auto:R: the number form round-trips */
        snprintf(buf, n, "%.17g", o->min + (o->max - o->min) / 3);
        break;
    case POLICY_OPTION_ENUM: {
        int last = 0;
        while (o->names[last + 1].name)
            last++;
        snprintf(buf, n, "%s", o->names[last].name);
        break;
    }
    case POLICY_OPTION_DURATION:
        snprintf(buf, n, "3ms");
        break;
    }
}

/* A configuration of policy p with every option changed from its default. */
static void config_of(const policy_info *p, policy_config *pc, double *slowdown) {
    policy_config_default(pc);
    pc->kind = p->kind;
    pc->workers = 3;
    pc->steps = 77;
    pc->batch = 48;
    pc->seed = 12345678901234ULL;
    pc->eval_every = 7;
    pc->use_ps = p->needs_ps;
    if (!pc->use_ps) pc->coll.algo = SIM_ALLREDUCE_TREE; /* "ps" stands for both fields */
    pc->coll.segment_bytes = 1024;
    pc->straggler_prob = 0.25;
    pc->straggler_factor = 3;
    pc->background_load = 0.125;
    for (int k = 0; k < policy_option_count(); k++) {
        const policy_option *o = policy_option_at(k);
        char text[64];
        run_policy_value v;
        other_value(o, text, sizeof text);
        CU_ASSERT_EQUAL_FATAL(policy_option_parse(o, text, &v), SS_OK);
        CU_ASSERT_EQUAL_FATAL(policy_option_apply(o, &v, pc), SS_OK);
    }
    pc->slowdown = slowdown;
}

/* Reads "prefix key = value" lines back through the codec. */
static void parse_lines(char *text, policy_config *out, unsigned char *seen) {
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strstr(line, " = ");
        CU_ASSERT_FATAL(eq != NULL && !strncmp(line, "# policy ", 9));
        *eq = '\0';
        char why[160] = "";
        int i = policy_codec_parse(line + 9, eq + 3, out, why, sizeof why);
        if (i < 0) fprintf(stderr, "\n  %s = %s: %d %s\n", line + 9, eq + 3, i, why);
        CU_ASSERT_FATAL(i >= 0);
        seen[i] = 1;
    }
}

static void test_codec_round_trip(void) {
    double slowdown[3] = {1, 2.5, 1};
    for (int r = 0; r < policy_registry_count(); r++) {
        policy_config pc, back;
        config_of(policy_registry_at(r), &pc, slowdown);
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        policy_codec_write(&pc, "# policy ", mem);
        fclose(mem);
        CU_ASSERT(strstr(text, "# policy slowdown = 1,2.5,1\n") != NULL);
        policy_config_default(&back);
        unsigned char seen[POLICY_CODEC_MAX_KEYS] = {0};
        parse_lines(text, &back, seen);
        free(text);
        for (int i = 0; i < policy_codec_count(); i++)
            CU_ASSERT(seen[i] || !policy_codec_required(i));
        pc.slowdown = back.slowdown = NULL;       /* the reader keeps the factors apart */
        pc.server_lr_scale = pc.local_epochs = 0; /* options resolved before a trace is written */
        /* not recorded: a trace has no per-layer times, so its replay cannot overlap */
        pc.overlap = back.overlap;
        pc.bucket_mb = back.bucket_mb;
        CU_ASSERT(memcmp(&pc, &back, sizeof pc) == 0);
    }
}

static void test_codec_is_strict(void) {
    policy_config pc;
    policy_config_default(&pc);
    char why[160] = "";
    CU_ASSERT_EQUAL(policy_codec_parse("stalenes", "3", &pc, why, sizeof why),
                    POLICY_CODEC_UNKNOWN);
    CU_ASSERT_EQUAL(policy_codec_parse("staleness", "3x", &pc, why, sizeof why),
                    POLICY_CODEC_INVALID);
    CU_ASSERT(strstr(why, "invalid value '3x' for policy key 'staleness'") != NULL);
    CU_ASSERT_EQUAL(policy_codec_parse("priority", "Layer", &pc, why, sizeof why),
                    POLICY_CODEC_INVALID);
    CU_ASSERT_EQUAL(policy_codec_parse("policy", "lol", &pc, why, sizeof why),
                    POLICY_CODEC_INVALID);
    CU_ASSERT(policy_codec_parse("selsync_order", "average-then-step", &pc, why, sizeof why) >= 0);
    CU_ASSERT_EQUAL(pc.order, SELSYNC_ORDER_AVERAGE_THEN_STEP);
    CU_ASSERT(policy_codec_parse("collective", "ps", &pc, why, sizeof why) >= 0);
    CU_ASSERT_EQUAL(pc.use_ps, 1);
}

/* Every policy option is a row of --help, and applies where the registry says. */
static void test_options_in_help(void) {
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    options_print_help(CMD_TRAIN, "syncsim train [options]", mem);
    fclose(mem);
    for (int k = 0; k < policy_option_count(); k++) {
        const policy_option *o = policy_option_at(k);
        char row[64];
        snprintf(row, sizeof row, "  --%s %s ", o->name, o->metavar);
        CU_ASSERT(strstr(text, row) != NULL);
        unsigned bits = 0;
        CU_ASSERT(options_lookup(CMD_TRAIN, o->name, &bits));
        for (int r = 0; r < policy_registry_count(); r++) {
            const policy_info *p = policy_registry_at(r);
            CU_ASSERT_EQUAL(!!(bits & options_policy_bit(p->name, 2)), policy_option_applies(o, p));
        }
    }
    free(text);
}

/* The defaults of policy_config are those of the options; the registry is consistent. */
static void test_defaults_and_rows(void) {
    run_config cfg;
    options_defaults(&cfg);
    policy_config a, b;
    policy_config_default(&a);
    policy_build_env env = {.mode = POLICY_BUILD_REPLAY};
    CU_ASSERT_EQUAL_FATAL(policy_config_build(&cfg, &env, &b), SS_OK);
    b.batch = a.batch;
    b.seed = a.seed;
    CU_ASSERT(memcmp(&a, &b, sizeof a) == 0);
    CU_ASSERT_STRING_EQUAL(policy_option_find("delta")->def, "0.05");
    int baselines = 0;
    for (int r = 0; r < policy_registry_count(); r++) {
        const policy_info *p = policy_registry_at(r);
        baselines += p->baseline;
        CU_ASSERT_PTR_EQUAL(policy_registry_of_kind(p->kind), p);
        CU_ASSERT_PTR_EQUAL(policy_registry_find(p->name), p);
        CU_ASSERT_STRING_EQUAL(policy_kind_name(p->kind), p->name);
    }
    CU_ASSERT_EQUAL(baselines, 1);
    CU_ASSERT_EQUAL(policy_registry_count(), POLICY_KIND_COUNT);
    CU_ASSERT_PTR_NULL(policy_registry_find("lol"));
}

static void test_labels(void) {
    policy_config pc;
    char buf[64];
    policy_config_default(&pc);
    const char *expect[][2] = {{"bsp", "bsp"},
                               {"ssp", "ssp (s=3)"},
                               {"asp", "asp"},
                               {"fedavg", "fedavg (H=8)"},
                               {"selsync", "selsync (\xce\xb4=0.05)"},
                               {"dssync", "dssync (G=2)"}};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        CU_ASSERT_EQUAL_FATAL(policy_kind_parse(expect[i][0], &pc.kind), SS_OK);
        policy_label(&pc, buf, sizeof buf);
        CU_ASSERT_STRING_EQUAL(buf, expect[i][1]);
    }
    /* auto:R, and with --delta-every K */
    CU_ASSERT_EQUAL_FATAL(policy_kind_parse("selsync", &pc.kind), SS_OK);
    pc.delta = -0.9;
    policy_label(&pc, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "selsync (\xce\xb4=auto:0.9)");
    pc.delta_every = 50;
    policy_label(&pc, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "selsync (\xce\xb4=auto:0.9 every 50)");
}

/* An unknown policy name is refused with the list of the valid ones. */
static void test_unknown_names(void) {
    policy_kind k;
    CU_ASSERT_EQUAL(policy_kind_parse("lol", &k), SS_EUSAGE);
    const char *msg = ss_error_message();
    CU_ASSERT(strstr(msg, "unknown policy 'lol'") != NULL);
    run_config cfg;
    char *argv[] = {"--policy", "lol"};
    CU_ASSERT_EQUAL(options_parse(CMD_TRAIN, 2, argv, &cfg), SS_EUSAGE);
    const char *opt_msg = ss_error_message();
    for (int r = 0; r < policy_registry_count(); r++) {
        CU_ASSERT(strstr(msg, policy_registry_at(r)->name) != NULL);
        CU_ASSERT(strstr(opt_msg, policy_registry_at(r)->name) != NULL);
    }
}

/* The builder: FedAvg's rounds from local epochs, the sampled clients per step, replay's scope. */
static void test_builder(void) {
    run_config cfg;
    char *argv[] = {"--policy",          "fedavg", "--workers",      "4",   "--batch",  "10",
                    "--client-fraction", "0.5",    "--local-epochs", "0.5", "--epochs", "2",
                    "--slow-workers",    "1"};
    CU_ASSERT_EQUAL_FATAL(options_parse(CMD_TRAIN, 14, argv, &cfg), SS_OK);
    policy_config pc;
    policy_build_env env = {.mode = POLICY_BUILD_RUN, .train_samples = 1000};
    CU_ASSERT_EQUAL_FATAL(policy_config_build(&cfg, &env, &pc), SS_OK);
    CU_ASSERT_EQUAL(env.steps_per_epoch, 50); /* 1000 / (2 clients x 10) */
    CU_ASSERT_EQUAL(pc.steps, 100);
    CU_ASSERT_EQUAL(pc.local_steps, 13); /* 0.5 x 1000 / 4 / 10 = 12.5 */
    CU_ASSERT_EQUAL(pc.eval_every, 5);
    CU_ASSERT(pc.slowdown && pc.slowdown[1] == 2 && pc.slowdown[0] == 1);
    free((void *)pc.slowdown);
    env.mode = POLICY_BUILD_REPLAY;
    CU_ASSERT_EQUAL_FATAL(policy_config_build(&cfg, &env, &pc), SS_OK);
    CU_ASSERT_PTR_NULL(pc.slowdown);
    CU_ASSERT_EQUAL(pc.workers, 1);
    CU_ASSERT_EQUAL(pc.straggler_factor, 1.0);
    CU_ASSERT_EQUAL(pc.client_fraction, 0.5);
}

static CU_TestInfo registry_tests[] = {
    {"policy codec: every policy's configuration round-trips", test_codec_round_trip},
    {"policy codec: unknown keys and invalid values are refused", test_codec_is_strict},
    {"policy options: a --help row each, applicability from the registry", test_options_in_help},
    {"policy registry: defaults of the options, one baseline, lookups", test_defaults_and_rows},
    {"policy registry: labels", test_labels},
    {"policy registry: unknown names list the valid ones", test_unknown_names},
    {"policy builder: run and replay", test_builder},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"policy registry, builder and codec", NULL, NULL, NULL, NULL, registry_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}
