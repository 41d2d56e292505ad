/* Tests of the text sets (emu/dataset_text.c): WikiText and PTB files the test writes (the
 * vocabulary from the training split, <eos> per line, <unk> for unseen words, windows of T + 1),
 * the World English Bible of sword-text-web when installed, and the model/data set checks. */
#include "ss_test.h"

#include "common/status.h"
#include "emu/dataset.h"
#include "kernels/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void write_text(const char *dir, const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs(text, f);
    fclose(f);
}

static void make_dir(char *dir, size_t size) {
    snprintf(dir, size, "/tmp/ss-text-XXXXXX");
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
}

static void remove_dir(const char *dir, const char *const *names) {
    char path[512];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void test_wikitext_files(void) {
    static const char *const names[] = {"wiki.train.tokens", "wiki.valid.tokens",
                                        "wiki.test.tokens"};
    char dir[64];
    make_dir(dir, sizeof dir);
    write_text(dir, names[0], " = Title = \n the cat sat \n\n the dog sat \n");
    write_text(dir, names[1], " the bird sat \n");
    write_text(dir, names[2], " the cat \n");
    dataset train, test;
    CU_ASSERT_EQUAL_FATAL(dataset_load("wikitext-2", dir, 1, &train, &test), SS_OK);
    /* ids in order of first appearance after <eos> 0 and <unk> 1: = 2, Title 3, the 4, cat 5,
     * sat 6, dog 7 (the empty line adds no <eos>) */
    static const uint32_t want[] = {2, 3, 2, 0, 4, 5, 6, 0, 4, 7, 6, 0};
    CU_ASSERT_EQUAL(train.n_tokens, sizeof want / sizeof want[0]);
    CU_ASSERT(memcmp(train.tokens, want, sizeof want) == 0);
    CU_ASSERT_EQUAL(train.classes, 8);
    CU_ASSERT_STRING_EQUAL(train.name, "wikitext-2");
    /* the evaluation set is the validation split: bird is unseen in training, so <unk> */
    static const uint32_t valid[] = {4, 1, 6, 0};
    CU_ASSERT_EQUAL(test.n_tokens, 4);
    CU_ASSERT(memcmp(test.tokens, valid, sizeof valid) == 0);
    /* windows of T + 1 = 4 tokens every T = 3: (12 - 1) / 3 = 3 samples */
    dataset_set_window(&train, 3);
    CU_ASSERT_EQUAL(train.n, 3);
    CU_ASSERT_EQUAL(train.w, 4);
    CU_ASSERT_EQUAL(train.x[4], 0.0f); /* sample 1 starts at token 3 */
    CU_ASSERT_EQUAL(train.x[5], 4.0f);
    CU_ASSERT_EQUAL(train.x[11], 7.0f); /* token 9: dog */
    dataset_free(&train);
    dataset_free(&test);
    /* the directory alone is recognized */
    CU_ASSERT_EQUAL_FATAL(dataset_load(dir, NULL, 1, &train, &test), SS_OK);
    CU_ASSERT_EQUAL(train.classes, 8);
    dataset_free(&train);
    dataset_free(&test);
    remove_dir(dir, names);
}

static void test_ptb_files(void) {
    static const char *const names[] = {"ptb.train.txt", "ptb.valid.txt", "ptb.test.txt"};
    char dir[64];
    make_dir(dir, sizeof dir);
    write_text(dir, names[0], " a b c <unk> \n b c a \n");
    write_text(dir, names[1], " c a x \n");
    write_text(dir, names[2], " a \n");
    dataset train, test;
    CU_ASSERT_EQUAL_FATAL(dataset_load(dir, NULL, 1, &train, &test), SS_OK);
    CU_ASSERT_STRING_EQUAL(train.name, "ptb");
    CU_ASSERT_EQUAL(train.classes, 5); /* <eos>, <unk>, a, b, c */
    CU_ASSERT_EQUAL(train.n_tokens, 9);
    CU_ASSERT_EQUAL(test.tokens[2], 1u); /* x */
    dataset_free(&train);
    dataset_free(&test);
    /* a missing split names the files expected */
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, names[2]);
    unlink(path);
    CU_ASSERT_EQUAL(dataset_load("ptb", dir, 1, &train, &test), SS_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "ptb.test.txt"));
    remove_dir(dir, names);
    CU_ASSERT_EQUAL(dataset_load("wikitext-103", NULL, 1, &train, &test), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "--data-dir"));
}

static void test_model_fit(void) {
    dataset img, img_test;
    CU_ASSERT_EQUAL_FATAL(dataset_load("synthetic", NULL, 1, &img, &img_test), SS_OK);
    model_spec spec;
    CU_ASSERT_EQUAL(model_spec_parse(&spec, "gpt:wlm", img.c, img.h, img.w, img.classes), SS_OK);
    CU_ASSERT_EQUAL(dataset_fit_model(&img, &img_test, &spec), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "web-bible"));
    static const char *const names[] = {"wiki.train.tokens", "wiki.valid.tokens",
                                        "wiki.test.tokens"};
    char dir[64];
    make_dir(dir, sizeof dir);
    for (int i = 0; i < 3; i++)
        write_text(dir, names[i], " one two three four five six seven eight nine ten \n");
    dataset train, test;
    CU_ASSERT_EQUAL_FATAL(dataset_load(dir, NULL, 1, &train, &test), SS_OK);
    CU_ASSERT_EQUAL(model_spec_parse(&spec, "mlp", train.c, train.h, train.w, train.classes),
                    SS_OK);
    CU_ASSERT_EQUAL(dataset_fit_model(&train, &test, &spec), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "fashion-mnist"));
    CU_ASSERT_EQUAL(model_spec_parse(&spec, "gpt:1,8,2,4", 1, 1, 1, train.classes), SS_OK);
    CU_ASSERT_EQUAL(dataset_fit_model(&train, &test, &spec), SS_OK);
    CU_ASSERT_EQUAL(train.w, 5);
    CU_ASSERT_EQUAL(train.n, 2); /* 11 tokens: (11 - 1) / 4 */
    dataset_free(&train);
    dataset_free(&test);
    dataset_free(&img);
    dataset_free(&img_test);
    remove_dir(dir, names);
}

#define WEB_DIR "/usr/share/sword/modules/texts/ztext/engWEB2015eb"

/* the shipped corpus: about 1.1 million words, 90 % training, 5 % validation */
static void test_web_bible(void) {
    struct stat st;
    if (stat(WEB_DIR "/ot.bzz", &st) != 0) {
        printf("(sword-text-web not installed: skipped) ");
        return;
    }
    dataset train, test;
    CU_ASSERT_EQUAL_FATAL(dataset_load("web-bible", NULL, 1, &train, &test), SS_OK);
    CU_ASSERT(train.n_tokens > 900000 && train.n_tokens < 1500000);
    double share = (double)test.n_tokens / (double)(train.n_tokens + test.n_tokens);
    CU_ASSERT(share > 0.04 && share < 0.07);
    CU_ASSERT(train.classes > 5000 && train.classes < 30000);
    CU_ASSERT_EQUAL(train.w, 36);
    printf("(%zu training, %zu validation tokens, vocabulary %d) ", train.n_tokens, test.n_tokens,
           train.classes);
    for (size_t i = 0; i < train.n_tokens; i += 997)
        CU_ASSERT_FATAL(train.tokens[i] < (uint32_t)train.classes);
    dataset_free(&train);
    dataset_free(&test);
}

static CU_TestInfo text_tests[] = {
    {"WikiText files: vocabulary, <eos>, <unk>, windows", test_wikitext_files},
    {"PTB files, missing splits", test_ptb_files},
    {"language models take text sets, image models image sets", test_model_fit},
    {"web-bible (sword-text-web) splits and vocabulary", test_web_bible},
    CU_TEST_INFO_NULL,
};

int main(void) {
    CU_SuiteInfo suites[] = {
        {"text_sets", NULL, NULL, NULL, NULL, text_tests},
        CU_SUITE_INFO_NULL,
    };
    return ss_test_main(suites);
}
