/* Data sets in memory: IDX (MNIST, Fashion-MNIST) and CIFAR-10 binary readers, per-channel
 * normalization with the train set's statistics, and the seeded synthetic Gaussian mixture.
 *
 * Letters: n samples, c channels, h x w pixels, D = c*h*w features, K classes.
 * Every reader goes through zlib's gzopen, which reads gzip and plain files alike. */
#include "emu/dataset.h"

#include "common/rng.h"
#include "common/status.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define CIFAR10_PIXELS        3072 /* bytes per image: 3 planes (R, G, B) of 32 x 32 */
#define CIFAR10_RECORD        (1 + CIFAR10_PIXELS)
#define CIFAR10_BATCH_RECORDS 10000 /* records per batch file in the published set */
#define CIFAR10_TRAIN_BATCHES 5
#define READ_CHUNK_BYTES      (1u << 24) /* largest single gzread */
#define FIRST_BUFFER_BYTES    (1u << 20) /* buffers grow from here as data really arrives */
#define PATH_BYTES            4096
#define DIR_MAX_BYTES         2048 /* longest directory name accepted, so joined paths fit */

static const char *const default_fashion_dir = "/usr/share/datasets/fashion-mnist";
static const char *const default_mnist_dir = "/usr/share/datasets/mnist";

/* ---------------------------------------------------------------- reading whole files */

static int open_input(const char *path, gzFile *out) {
    gzFile f = gzopen(path, "rb");
    if (!f) {
        int e = errno ? errno : ENOMEM;
        return ss_error_set(e == ENOMEM ? SS_ENOMEM : SS_EINPUT, "%s: cannot open: %s", path,
                            strerror(e));
    }
    gzbuffer(f, 1u << 17);
    *out = f;
    return SS_OK;
}

/* zlib's message for f's last error, without the "PATH: " prefix gzerror puts on it. */
static const char *gz_message(gzFile f, const char *path) {
    int zerr;
    const char *msg = gzerror(f, &zerr);
    size_t len = strlen(path);
    if (strncmp(msg, path, len) == 0 && msg[len] == ':' && msg[len + 1] == ' ') msg += len + 2;
    return msg;
}

/* Reads up to `want` bytes from f into a buffer that grows as data arrives, so that a corrupt
 * header claiming a huge size costs no huge allocation. *got: bytes read (< want at the end of
 * the data); *cut: 1 if the gzip stream itself ended early (a file cut during copying). */
static int read_upto(gzFile f, const char *path, size_t want, uint8_t **out, size_t *got,
                     int *cut) {
    size_t cap = want < FIRST_BUFFER_BYTES ? want : FIRST_BUFFER_BYTES;
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf) return ss_error_set(SS_ENOMEM, "%s: out of memory for %zu bytes", path, cap);
    size_t len = 0;
    *cut = 0;
    while (len < want) {
        if (len == cap) {
            size_t grown = cap > want / 2 ? want : 2 * cap;
            uint8_t *b = realloc(buf, grown);
            if (!b) {
                free(buf);
                return ss_error_set(SS_ENOMEM, "%s: out of memory for %zu bytes", path, grown);
            }
            buf = b;
            cap = grown;
        }
        size_t ask = cap - len < READ_CHUNK_BYTES ? cap - len : READ_CHUNK_BYTES;
        int r = gzread(f, buf + len, (unsigned)ask);
        if (r < 0) {
            free(buf);
            return ss_error_set(SS_EINPUT, "%s: read error after %zu bytes: %s", path, len,
                                gz_message(f, path));
        }
        if (r == 0) {
            int zerr;
            gzerror(f, &zerr);
            *cut = zerr == Z_BUF_ERROR;
            break;
        }
        len += (size_t)r;
    }
    *out = buf;
    *got = len;
    return SS_OK;
}

/* 1 if f holds at least one more byte. */
static int has_more(gzFile f) {
    uint8_t extra;
    return gzread(f, &extra, 1) > 0;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* ---------------------------------------------------------------- IDX */

int idx_read(const char *path, int expect_dims, uint8_t **data, size_t dims[3]) {
    SS_ASSERT(expect_dims >= 1 && expect_dims <= 3);
    static const char *const what[4] = {"", "label data", "matrix data", "image data"};
    const uint32_t magic_want = 0x00000800u | (uint32_t)expect_dims; /* ubyte, expect_dims */
    *data = NULL;
    gzFile f;
    int st = open_input(path, &f);
    if (st != SS_OK) return st;

    uint8_t head[4 + 4 * 3];
    size_t head_bytes = 4 + 4 * (size_t)expect_dims;
    int got_head = gzread(f, head, (unsigned)head_bytes);
    if (got_head < 0) {
        st = ss_error_set(SS_EINPUT, "%s: cannot read the IDX header: %s", path,
                          gz_message(f, path));
        gzclose(f);
        return st;
    }
    if (got_head < 4) {
        gzclose(f);
        return ss_error_set(SS_EINPUT,
                            "%s: truncated: expected a %zu-byte IDX header, found %d bytes", path,
                            head_bytes, got_head);
    }
    uint32_t magic = be32(head);
    if (magic != magic_want) {
        gzclose(f);
        const char *hint = "";
        if (magic == 0x00000803u)
            hint = " (this is an IDX image file)";
        else if (magic == 0x00000801u)
            hint = " (this is an IDX label file)";
        else if ((magic >> 16) != 0)
            hint = " (not an IDX file: its first two bytes must be 0)";
        return ss_error_set(SS_EINPUT,
                            "%s: bad magic 0x%08x, expected 0x%08x (IDX unsigned bytes, %d "
                            "dimension%s)%s",
                            path, magic, magic_want, expect_dims, expect_dims > 1 ? "s" : "", hint);
    }
    if ((size_t)got_head < head_bytes) {
        gzclose(f);
        return ss_error_set(SS_EINPUT,
                            "%s: truncated: expected a %zu-byte IDX header, found %d bytes", path,
                            head_bytes, got_head);
    }
    size_t want = 1;
    char shape[96] = "";
    for (int i = 0; i < 3; i++)
        dims[i] = 1;
    for (int i = 0; i < expect_dims; i++) {
        dims[i] = be32(head + 4 + 4 * i);
        if (dims[i] == 0 || want > SIZE_MAX / dims[i]) {
            gzclose(f);
            return ss_error_set(SS_EINPUT, "%s: corrupt IDX header: dimension %d is %zu", path, i,
                                dims[i]);
        }
        want *= dims[i];
        size_t used = strlen(shape);
        snprintf(shape + used, sizeof shape - used, "%s%zu", i ? " x " : "", dims[i]);
    }

    uint8_t *buf;
    size_t got;
    int cut;
    st = read_upto(f, path, want, &buf, &got, &cut);
    if (st != SS_OK) {
        gzclose(f);
        return st;
    }
    if (got < want) {
        gzclose(f);
        free(buf);
        return ss_error_set(SS_EINPUT, "%s: truncated: expected %zu bytes of %s (%s), found %zu%s",
                            path, want, what[expect_dims], shape, got,
                            cut ? " (the gzip stream ends early)" : "");
    }
    if (has_more(f)) {
        gzclose(f);
        free(buf);
        return ss_error_set(SS_EINPUT,
                            "%s: expected exactly %zu bytes of %s (%s), found more: the header "
                            "and the data disagree",
                            path, want, what[expect_dims], shape);
    }
    gzclose(f);
    *data = buf;
    return SS_OK;
}

/* ---------------------------------------------------------------- CIFAR-10 */

int cifar10_read_batch(const char *path, uint8_t **pixels, uint8_t **labels, size_t *n) {
    gzFile f;
    int st = open_input(path, &f);
    if (st != SS_OK) return st;
    /* No header: read everything (a batch is 30.7 MB) and check it is whole records. */
    uint8_t *buf;
    size_t got;
    int cut;
    st = read_upto(f, path, SIZE_MAX, &buf, &got, &cut);
    gzclose(f);
    if (st != SS_OK) return st;
    size_t records = got / CIFAR10_RECORD;
    if (got == 0 || got % CIFAR10_RECORD != 0) {
        size_t expect = got < CIFAR10_BATCH_RECORDS * (size_t)CIFAR10_RECORD ? CIFAR10_BATCH_RECORDS
                                                                             : records + 1;
        free(buf);
        return ss_error_set(SS_EINPUT,
                            "%s: truncated: expected %zu bytes (%zu records of 1 label + %d pixel "
                            "bytes), found %zu%s",
                            path, expect * CIFAR10_RECORD, expect, CIFAR10_PIXELS, got,
                            cut ? " (the gzip stream ends early)" : "");
    }
    for (size_t i = 0; i < records; i++) {
        uint8_t label = buf[i * CIFAR10_RECORD];
        if (label >= 10) {
            free(buf);
            return ss_error_set(SS_EINPUT,
                                "%s: record %zu has label %u, expected 0..9: not a CIFAR-10 "
                                "binary batch (CIFAR-100 records have 2 label bytes)",
                                path, i, label);
        }
    }
    uint8_t *px = realloc(*pixels, (*n + records) * CIFAR10_PIXELS);
    if (!px) {
        free(buf);
        return ss_error_set(SS_ENOMEM, "%s: out of memory for %zu images", path, *n + records);
    }
    *pixels = px;
    uint8_t *lb = realloc(*labels, *n + records);
    if (!lb) {
        free(buf);
        return ss_error_set(SS_ENOMEM, "%s: out of memory for %zu labels", path, *n + records);
    }
    *labels = lb;
    for (size_t i = 0; i < records; i++) {
        const uint8_t *rec = buf + i * CIFAR10_RECORD;
        lb[*n + i] = rec[0];
        memcpy(px + (*n + i) * CIFAR10_PIXELS, rec + 1, CIFAR10_PIXELS);
    }
    *n += records;
    free(buf);
    return SS_OK;
}

/* ---------------------------------------------------------------- building data sets */

void dataset_free(dataset *d) {
    if (!d) return;
    free(d->x);
    free(d->y);
    free(d->tokens);
    memset(d, 0, sizeof *d);
}

static int is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* out = DIR/NAME; dataset_load bounds the directory's length, so it always fits. */
static void join_path(char out[PATH_BYTES], const char *dir, const char *name) {
    int len = snprintf(out, PATH_BYTES, "%s/%s", dir, name);
    SS_ASSERT(len > 0 && len < PATH_BYTES);
}

/* Finds DIR/BASE.gz or DIR/BASE; returns 1 and the path found. */
static int find_idx_file(const char *dir, const char *base, char path[PATH_BYTES]) {
    char gz[128];
    snprintf(gz, sizeof gz, "%s.gz", base);
    join_path(path, dir, gz);
    if (is_file(path)) return 1;
    join_path(path, dir, base);
    return is_file(path);
}

/* Fills d's shape and converts the bytes pixels (n, c, h*w) to floats with per-channel
 * statistics mean[c], std[c] of pixel/255. */
static void fill_normalized(dataset *d, const char *name, size_t n, int c, int h, int w,
                            int classes, const uint8_t *pixels, uint8_t *labels, const double *mean,
                            const double *std) {
    snprintf(d->name, sizeof d->name, "%s", name);
    d->n = n;
    d->c = c;
    d->h = h;
    d->w = w;
    d->classes = classes;
    size_t plane = (size_t)h * w;
    d->x = ss_malloc(n * c * plane * sizeof(float));
    d->y = labels;
    float lut[256];
    for (int ch = 0; ch < c; ch++) {
        for (int v = 0; v < 256; v++)
            lut[v] = (float)((v / 255.0 - mean[ch]) / std[ch]);
        for (size_t i = 0; i < n; i++) {
            const uint8_t *src = pixels + (i * c + ch) * plane;
            float *dst = d->x + (i * c + ch) * plane;
            for (size_t j = 0; j < plane; j++)
                dst[j] = lut[src[j]];
        }
    }
}

/* Per-channel mean and standard deviation of pixel/255 over (n, c, plane) bytes, from exact
 * byte histograms (float64). A constant channel gets std 1 rather than a division by 0. */
static void channel_stats(const uint8_t *pixels, size_t n, int c, size_t plane, double *mean,
                          double *std) {
    for (int ch = 0; ch < c; ch++) {
        uint64_t hist[256] = {0};
        for (size_t i = 0; i < n; i++) {
            const uint8_t *src = pixels + (i * c + ch) * plane;
            for (size_t j = 0; j < plane; j++)
                hist[src[j]]++;
        }
        double count = (double)n * plane, sum = 0.0, sq = 0.0;
        for (int v = 0; v < 256; v++)
            sum += hist[v] * (v / 255.0);
        mean[ch] = sum / count;
        for (int v = 0; v < 256; v++)
            sq += hist[v] * (v / 255.0 - mean[ch]) * (v / 255.0 - mean[ch]);
        std[ch] = sqrt(sq / count);
        if (!(std[ch] > 1e-12)) std[ch] = 1.0;
    }
}

/* Normalizes a byte train/test pair into datasets, taking ownership of the label arrays. */
static void build_pair(const char *name, int c, int h, int w, int classes, const uint8_t *px_train,
                       uint8_t *y_train, size_t n_train, const uint8_t *px_test, uint8_t *y_test,
                       size_t n_test, dataset *train, dataset *test) {
    double mean[3], std[3];
    SS_ASSERT(c >= 1 && c <= 3);
    channel_stats(px_train, n_train, c, (size_t)h * w, mean, std);
    fill_normalized(train, name, n_train, c, h, w, classes, px_train, y_train, mean, std);
    fill_normalized(test, name, n_test, c, h, w, classes, px_test, y_test, mean, std);
}

/* Reads an image file and its label file and checks they agree. */
static int idx_read_pair(const char *images_path, const char *labels_path, uint8_t **pixels,
                         uint8_t **labels, size_t img_dims[3]) {
    size_t lab_dims[3];
    int st = idx_read(images_path, 3, pixels, img_dims);
    if (st != SS_OK) return st;
    st = idx_read(labels_path, 1, labels, lab_dims);
    if (st != SS_OK) {
        free(*pixels);
        *pixels = NULL;
        return st;
    }
    if (lab_dims[0] != img_dims[0]) {
        free(*pixels);
        free(*labels);
        *pixels = *labels = NULL;
        return ss_error_set(SS_EINPUT, "%s holds %zu images but %s holds %zu labels", images_path,
                            img_dims[0], labels_path, lab_dims[0]);
    }
    return SS_OK;
}

/* Loads DIR/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]. Returns SS_EINPUT with a hint
 * naming `missing_hint` when the train images are not there. */
static int load_idx_dir(const char *name, const char *dir, const char *missing_hint, dataset *train,
                        dataset *test) {
    static const char *const bases[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    char paths[4][PATH_BYTES];
    for (int i = 0; i < 4; i++) {
        if (find_idx_file(dir, bases[i], paths[i])) continue;
        if (i == 0)
            return ss_error_set(SS_EINPUT, "%s: %s%s (tried %s/%s.gz and %s/%s): %s", name, dir,
                                is_dir(dir) ? " holds no IDX images" : " does not exist", dir,
                                bases[0], dir, bases[0], missing_hint);
        return ss_error_set(SS_EINPUT,
                            "%s: %s/%s[.gz] is missing (the set needs %s, %s, %s and %s)", name,
                            dir, bases[i], bases[0], bases[1], bases[2], bases[3]);
    }
    uint8_t *px_train = NULL, *y_train = NULL, *px_test = NULL, *y_test = NULL;
    size_t d_train[3], d_test[3];
    int st = idx_read_pair(paths[0], paths[1], &px_train, &y_train, d_train);
    if (st != SS_OK) return st;
    st = idx_read_pair(paths[2], paths[3], &px_test, &y_test, d_test);
    if (st != SS_OK) goto fail;
    if (d_test[1] != d_train[1] || d_test[2] != d_train[2] || d_train[1] > 65535 ||
        d_train[2] > 65535) {
        st = ss_error_set(SS_EINPUT, "%s holds %zu x %zu images but %s holds %zu x %zu", paths[0],
                          d_train[1], d_train[2], paths[2], d_test[1], d_test[2]);
        goto fail;
    }
    /* K = largest train label + 1 (10 for MNIST and Fashion-MNIST). */
    int classes = 0;
    size_t top = 0, count[256] = {0};
    for (size_t i = 0; i < d_train[0]; i++) {
        count[y_train[i]]++;
        if (y_train[i] >= classes) classes = y_train[i] + 1, top = i;
    }
    /* Classes without a training sample: one corrupt label byte (200) would make a model of
     * 201 classes, 20 times the parameters and exchanged bytes, without a word. A tiny set may
     * lack a few classes; a set of 10 samples per class or more lacks none, and no set lacks
     * most of them. */
    int empty = 0, first_empty = -1;
    for (int k = 0; k < classes; k++)
        if (!count[k] && empty++ == 0) first_empty = k;
    if (empty > classes / 2 || (empty && d_train[0] >= 10 * (size_t)classes)) {
        st = ss_error_set(SS_EINPUT,
                          "%s: label %d of sample %zu makes %d classes, but %d of them (the "
                          "first: %d) have no training sample; labels must run 0..K-1 (a "
                          "corrupt label byte?)",
                          paths[1], classes - 1, top, classes, empty, first_empty);
        goto fail;
    }
    for (size_t i = 0; i < d_test[0]; i++) {
        if (y_test[i] >= classes) {
            st = ss_error_set(SS_EINPUT,
                              "%s: label %u of sample %zu is not among the %d classes "
                              "of %s",
                              paths[3], y_test[i], i, classes, paths[1]);
            goto fail;
        }
    }
    build_pair(name, 1, (int)d_train[1], (int)d_train[2], classes, px_train, y_train, d_train[0],
               px_test, y_test, d_test[0], train, test);
    free(px_train);
    free(px_test);
    return SS_OK;
fail:
    free(px_train);
    free(y_train);
    free(px_test);
    free(y_test);
    return st;
}

/* Loads DIR/data_batch_{1..5}.bin and DIR/test_batch.bin (or the same under
 * DIR/cifar-10-batches-bin, the folder the archive unpacks to). The five train batches must
 * hold equally many records, which catches a batch cut at a record boundary. */
static int load_cifar_dir(const char *name, const char *dir, dataset *train, dataset *test) {
    char base[PATH_BYTES], path[PATH_BYTES], tried[2][PATH_BYTES], file[32];
    join_path(tried[0], dir, "data_batch_1.bin");
    join_path(tried[1], dir, "cifar-10-batches-bin/data_batch_1.bin");
    if (is_file(tried[0]))
        snprintf(base, PATH_BYTES, "%s", dir);
    else if (is_file(tried[1]))
        join_path(base, dir, "cifar-10-batches-bin");
    else
        return ss_error_set(SS_EINPUT,
                            "%s: no CIFAR-10 binary batches (tried %s and %s); no Debian package "
                            "provides CIFAR-10: pass --data-dir DIR holding data_batch_1.bin .. "
                            "data_batch_5.bin and test_batch.bin (the binary version of the set)",
                            name, tried[0], tried[1]);
    uint8_t *px_train = NULL, *y_train = NULL, *px_test = NULL, *y_test = NULL;
    size_t n_train = 0, n_test = 0, first = 0;
    int st = SS_OK;
    for (int b = 1; b <= CIFAR10_TRAIN_BATCHES; b++) {
        snprintf(file, sizeof file, "data_batch_%d.bin", b);
        join_path(path, base, file);
        size_t before = n_train;
        st = cifar10_read_batch(path, &px_train, &y_train, &n_train);
        if (st != SS_OK) goto fail;
        if (b == 1)
            first = n_train;
        else if (n_train - before != first) {
            st = ss_error_set(SS_EINPUT,
                              "%s: truncated: expected %zu bytes (%zu records, as in "
                              "data_batch_1.bin), found %zu",
                              path, first * CIFAR10_RECORD, first,
                              (n_train - before) * CIFAR10_RECORD);
            goto fail;
        }
    }
    join_path(path, base, "test_batch.bin");
    st = cifar10_read_batch(path, &px_test, &y_test, &n_test);
    if (st != SS_OK) goto fail;
    build_pair(name, 3, 32, 32, 10, px_train, y_train, n_train, px_test, y_test, n_test, train,
               test);
    free(px_train);
    free(px_test);
    return SS_OK;
fail:
    free(px_train);
    free(y_train);
    free(px_test);
    free(y_test);
    return st;
}

/* ---------------------------------------------------------------- synthetic */

/* Norm of a class mean at separation 1. With unit noise the pairwise distance of two means is
 * about sqrt(2) * SYNTHETIC_MEAN_NORM * separation; at the defaults (K = 10, D = 784, 8000
 * train samples) a softmax regression trained by SGD reaches about 87 % test accuracy and the
 * nearest-class-mean rule about 94 %: learnable, not trivial. */
#define SYNTHETIC_MEAN_NORM 3.4

void synthetic_spec_default(synthetic_spec *s) {
    s->n_train = 8000;
    s->n_test = 2000;
    s->classes = 10;
    s->c = 1;
    s->h = 28;
    s->w = 28;
    s->separation = 1.0;
}

/* Draws n samples: balanced labels (each class n/K or n/K + 1 times, in seeded order) and
 * x = mean[y] + N(0, I). means: (K, D). */
static void synthetic_draw(rng *r, const double *means, int classes, size_t dim, size_t n,
                           dataset *d) {
    d->x = ss_malloc(n * dim * sizeof(float));
    d->y = ss_malloc(n);
    d->n = n;
    for (size_t i = 0; i < n; i++)
        d->y[i] = (uint8_t)(i % (size_t)classes);
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)rng_below(r, i);
        uint8_t t = d->y[i - 1];
        d->y[i - 1] = d->y[j];
        d->y[j] = t;
    }
    for (size_t i = 0; i < n; i++) {
        const double *mu = means + (size_t)d->y[i] * dim;
        float *x = d->x + i * dim;
        for (size_t j = 0; j < dim; j++)
            x[j] = (float)(mu[j] + rng_normal(r));
    }
}

int dataset_synthetic(const synthetic_spec *spec, uint64_t seed, dataset *train, dataset *test) {
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    if (spec->classes < 2 || spec->classes > 256)
        return ss_error_set(SS_EUSAGE, "synthetic: %d classes, expected 2..256", spec->classes);
    if (spec->c < 1 || spec->h < 1 || spec->w < 1 || spec->c > 4096 || spec->h > 4096 ||
        spec->w > 4096)
        return ss_error_set(SS_EUSAGE, "synthetic: bad sample shape %d x %d x %d", spec->c, spec->h,
                            spec->w);
    if (spec->n_train < 1 || spec->n_test < 1)
        return ss_error_set(SS_EUSAGE, "synthetic: %zu train and %zu test samples, need >= 1 each",
                            spec->n_train, spec->n_test);
    if (!(spec->separation > 0.0) || !isfinite(spec->separation))
        return ss_error_set(SS_EUSAGE, "synthetic: separation %g, expected a positive number",
                            spec->separation);
    size_t dim = (size_t)spec->c * spec->h * spec->w;
    rng r;
    rng_seed(&r, seed, RNG_STREAM_DATA);
    /* Means first, then train, then test: one stream, so the sets depend on the seed only. */
    double *means = ss_malloc((size_t)spec->classes * dim * sizeof(double));
    double scale = SYNTHETIC_MEAN_NORM * spec->separation / sqrt((double)dim);
    for (size_t i = 0; i < (size_t)spec->classes * dim; i++)
        means[i] = scale * rng_normal(&r);
    synthetic_draw(&r, means, spec->classes, dim, spec->n_train, train);
    synthetic_draw(&r, means, spec->classes, dim, spec->n_test, test);
    free(means);
    dataset *both[2] = {train, test};
    for (int i = 0; i < 2; i++) {
        snprintf(both[i]->name, sizeof both[i]->name, "synthetic");
        both[i]->c = spec->c;
        both[i]->h = spec->h;
        both[i]->w = spec->w;
        both[i]->classes = spec->classes;
    }
    return SS_OK;
}

/* ---------------------------------------------------------------- dispatch */

int dataset_load(const char *spec, const char *dir, uint64_t seed, dataset *train, dataset *test) {
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    if (!spec || !*spec)
        return ss_error_set(SS_EUSAGE, "no data set given: expected fashion-mnist, mnist, "
                                       "cifar10, synthetic or a directory");
    if (strlen(spec) > DIR_MAX_BYTES || (dir && strlen(dir) > DIR_MAX_BYTES))
        return ss_error_set(SS_EUSAGE, "data directory name longer than %d bytes", DIR_MAX_BYTES);
    if (dataset_is_text_spec(spec)) return dataset_text_load(spec, dir, train, test);
    if (strcmp(spec, "synthetic") == 0) {
        synthetic_spec s;
        synthetic_spec_default(&s);
        return dataset_synthetic(&s, seed, train, test);
    }
    if (strcmp(spec, "fashion-mnist") == 0)
        return load_idx_dir(spec, dir ? dir : default_fashion_dir,
                            "install dataset-fashion-mnist (apt-get install "
                            "dataset-fashion-mnist) or pass --data-dir DIR",
                            train, test);
    if (strcmp(spec, "mnist") == 0)
        return load_idx_dir(spec, dir ? dir : default_mnist_dir,
                            "no Debian package provides MNIST (dataset-fashion-mnist provides "
                            "Fashion-MNIST only): put train-images-idx3-ubyte, "
                            "train-labels-idx1-ubyte, t10k-images-idx3-ubyte and "
                            "t10k-labels-idx1-ubyte (gzip or not) in a directory and pass "
                            "--data-dir DIR",
                            train, test);
    if (strcmp(spec, "cifar10") == 0) {
        if (!dir)
            return ss_error_set(SS_EUSAGE,
                                "cifar10 needs --data-dir DIR holding data_batch_1.bin .. "
                                "data_batch_5.bin and test_batch.bin (no Debian package "
                                "provides CIFAR-10)");
        return load_cifar_dir(spec, dir, train, test);
    }
    if (!is_dir(spec))
        return ss_error_set(SS_EUSAGE,
                            "unknown data set '%s': expected fashion-mnist, mnist, cifar10, "
                            "synthetic, or a directory holding train-images-idx3-ubyte[.gz] "
                            "(IDX) or data_batch_1.bin (CIFAR-10 binary)",
                            spec);
    /* A directory: its format from the files it holds; the name from the format (an IDX
     * directory whose name mentions "fashion" is taken for Fashion-MNIST). */
    char path[PATH_BYTES];
    if (find_idx_file(spec, "train-images-idx3-ubyte", path))
        return load_idx_dir(strstr(spec, "fashion") ? "fashion-mnist" : "mnist", spec, "", train,
                            test);
    join_path(path, spec, "data_batch_1.bin");
    char nested[PATH_BYTES];
    join_path(nested, spec, "cifar-10-batches-bin/data_batch_1.bin");
    if (is_file(path) || is_file(nested)) return load_cifar_dir("cifar10", spec, train, test);
    return ss_error_set(SS_EINPUT,
                        "%s: no data set found (tried %s/train-images-idx3-ubyte[.gz] for IDX, "
                        "%s and %s for CIFAR-10 binary)",
                        spec, spec, path, nested);
}
