/* Data sets held in memory as normalized float features and byte labels.
 *
 * Sources: Fashion-MNIST (default; Debian's dataset-fashion-mnist in
 * /usr/share/datasets/fashion-mnist, IDX files, gzip or not), MNIST IDX files (same reader),
 * CIFAR-10 binary batches, and a seeded synthetic Gaussian-mixture classification set.
 *
 *     dataset train, test;
 *     if (dataset_load("fashion-mnist", NULL, seed, &train, &test) != SS_OK) ...ss_error_message()
 *     ... dataset_free(&train); dataset_free(&test);
 */
#ifndef SS_EMU_DATASET_H
#define SS_EMU_DATASET_H

#include <stddef.h>
#include <stdint.h>

typedef struct dataset {
    char name[64]; /* "fashion-mnist", "mnist", "cifar10", "synthetic" */
    size_t n;      /* samples */
    int c, h, w;   /* shape of one sample; features per sample D = c*h*w */
    int classes;   /* K */
    float *x;      /* (n, D) normalized: (pixel/255 - mean) / std, per channel over the train set */
    uint8_t *y;    /* (n) labels in [0, K) */
    /* text sets (dataset_text.c): the split's token stream; a sample is a window of T + 1
     * tokens (ids as floats in x, y all 0), D = w = T + 1, K = the vocabulary. NULL for images. */
    uint32_t *tokens;
    size_t n_tokens;
} dataset;

static inline size_t dataset_features(const dataset *d) {
    return (size_t)d->c * d->h * d->w;
}

/* Loads a train/test pair. `spec` is "fashion-mnist", "mnist", "cifar10", "synthetic" or a
 * directory path (its format detected from the files it holds). `dir` overrides the directory
 * for the named sets (NULL: fashion-mnist -> /usr/share/datasets/fashion-mnist, mnist ->
 * /usr/share/datasets/mnist, cifar10 -> must be given). Test-set normalization uses the train
 * set's statistics. Errors: SS_EINPUT naming the file and what was expected (size, magic), or the
 * directories tried and the Debian package that provides the set; SS_EUSAGE for a bad spec. */
int dataset_load(const char *spec, const char *dir, uint64_t seed, dataset *train, dataset *test);

/* Synthetic set: K classes of Gaussian clusters in D = c*h*w dimensions, drawn from the seed. */
typedef struct synthetic_spec {
    size_t n_train, n_test; /* default 8000, 2000 */
    int classes;            /* default 10 */
    int c, h, w;            /* default 1, 28, 28 */
    double separation;      /* distance scale of class means (default 1.0; larger is easier) */
} synthetic_spec;
void synthetic_spec_default(synthetic_spec *s);
int dataset_synthetic(const synthetic_spec *spec, uint64_t seed, dataset *train, dataset *test);

/* IDX reader (MNIST format, optional gzip): images (n, rows, cols) bytes or labels (n) bytes.
 * Checks magic, dimensions and the exact size; truncated or corrupt files give SS_EINPUT with
 * the file name and the expected size. Caller frees *data with free(). */
int idx_read(const char *path, int expect_dims, uint8_t **data, size_t dims[3]);

/* CIFAR-10 binary batch (records of 1 label byte + 3072 pixel bytes). Appends to out arrays. */
int cifar10_read_batch(const char *path, uint8_t **pixels, uint8_t **labels, size_t *n);

void dataset_free(dataset *d);

/* ---- text sets for language models (dataset_text.c) ----
 * "web-bible": the World English Bible (public domain) of Debian's sword-text-web, read from its
 * SWORD zText module (default /usr/share/sword/modules/texts/ztext/engWEB2015eb); word-level,
 * split into blocks of 10,000 words, block k going to validation when k mod 20 = 18, to test
 * when 19, to training otherwise. "wikitext-2", "wikitext-103" (wiki.{train,valid,test}.tokens)
 * and "ptb" (ptb.{train,valid,test}.txt) from --data-dir DIR: whitespace-separated tokens, an
 * <eos> after each line (PyTorch's word_language_model). The vocabulary comes from the training
 * split (web-bible: words seen at least twice, the rest <unk>); the evaluation set ("test" of
 * the pair) is the validation split. Windows of T + 1 = 36 tokens until dataset_fit_model. */
int dataset_text_load(const char *spec, const char *dir, dataset *train, dataset *test);
/* 1 for a name or directory dataset_text_load takes. */
int dataset_is_text_spec(const char *spec);
/* Re-cuts a text set into windows of t + 1 tokens (n = (tokens - 1) / t samples). */
void dataset_set_window(dataset *d, int t);
/* A language model needs a text set and an image model an image set: SS_EUSAGE naming the sets
 * that fit; cuts text sets to the model's sequence length. */
struct model_spec;
int dataset_fit_model(dataset *train, dataset *test, const struct model_spec *spec);
/* The same rule before a set is read: set_name is text (text != 0) or images. */
int dataset_kind_fits(const char *set_name, int text, const struct model_spec *spec);

#endif
