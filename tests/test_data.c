/* Tests of emu/dataset and emu/partition: the IDX and CIFAR-10 readers on small files written
 * here (plain and gzip), the real Fashion-MNIST set when installed, the synthetic set, the four
 * partitions and the batch iterator. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "emu/dataset.h"
#include "emu/partition.h"

#include "common/status.h"
#include "ss_test.h"

#include <ftw.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char tmp_dir[64]; /* a fresh directory per run, removed by the suite's cleanup */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int suite_init(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/ss_test_data_XXXXXX");
    return mkdtemp(tmp_dir) ? 0 : -1;
}

static int suite_cleanup(void) {
    return nftw(tmp_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* tmp_dir/sub/name; creates tmp_dir/sub. */
static const char *tmp_path(const char *sub, const char *name) {
    static char path[4][512];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 512, "%s/%s", tmp_dir, sub);
    mkdir(p, 0700);
    snprintf(p, 512, "%s/%s/%s", tmp_dir, sub, name);
    return p;
}

static void write_file(const char *path, const uint8_t *bytes, size_t len, int gzip) {
    if (gzip) {
        gzFile f = gzopen(path, "wb");
        CU_ASSERT_FATAL(f != NULL);
        CU_ASSERT_FATAL(gzwrite(f, bytes, (unsigned)len) == (int)len);
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        CU_ASSERT_FATAL(f != NULL);
        CU_ASSERT_FATAL(fwrite(bytes, 1, len, f) == len);
        fclose(f);
    }
}

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Writes an IDX file: magic, dims[0..ndims), then `data_bytes` bytes of data (which may differ
 * from the product of dims, to make truncated or overlong files). */
static void write_idx(const char *path, uint32_t magic, int ndims, const uint32_t *dims,
                      const uint8_t *data, size_t data_bytes, int gzip) {
    size_t head = 4 + 4 * (size_t)ndims;
    uint8_t *buf = malloc(head + data_bytes);
    put_be32(buf, magic);
    for (int i = 0; i < ndims; i++)
        put_be32(buf + 4 + 4 * i, dims[i]);
    if (data_bytes) memcpy(buf + head, data, data_bytes);
    write_file(path, buf, head + data_bytes, gzip);
    free(buf);
}

static int message_has(const char *needle) {
    if (strstr(ss_error_message(), needle)) return 1;
    fprintf(stderr, "\n  message '%s' lacks '%s'\n", ss_error_message(), needle);
    return 0;
}

/* ---------------------------------------------------------------- IDX */

static void test_idx_read_values(void) {
    uint8_t px[3 * 2 * 2] = {0, 1, 2, 3, 10, 20, 30, 40, 250, 251, 252, 255};
    uint8_t lb[3] = {7, 0, 9};
    uint32_t img_dims[3] = {3, 2, 2}, lab_dims[1] = {3};
    for (int gz = 0; gz < 2; gz++) {
        const char *ip = tmp_path("idx", gz ? "img.gz" : "img");
        const char *lp = tmp_path("idx", gz ? "lab.gz" : "lab");
        write_idx(ip, 0x803, 3, img_dims, px, sizeof px, gz);
        write_idx(lp, 0x801, 1, lab_dims, lb, sizeof lb, gz);
        uint8_t *data = NULL;
        size_t dims[3] = {0, 0, 0};
        CU_ASSERT_EQUAL_FATAL(idx_read(ip, 3, &data, dims), SS_OK);
        CU_ASSERT(dims[0] == 3 && dims[1] == 2 && dims[2] == 2);
        CU_ASSERT(memcmp(data, px, sizeof px) == 0);
        free(data);
        CU_ASSERT_EQUAL_FATAL(idx_read(lp, 1, &data, dims), SS_OK);
        CU_ASSERT(dims[0] == 3 && dims[1] == 1 && dims[2] == 1);
        CU_ASSERT(memcmp(data, lb, sizeof lb) == 0);
        free(data);
    }
}

static void test_idx_read_truncated(void) {
    uint8_t px[50] = {0};
    uint32_t dims_hdr[3] = {5, 4, 4}; /* 80 bytes promised, 50 present */
    for (int gz = 0; gz < 2; gz++) {
        const char *ip = tmp_path("idx", gz ? "short-img.gz" : "short-img");
        write_idx(ip, 0x803, 3, dims_hdr, px, sizeof px, gz);
        uint8_t *data = (uint8_t *)1;
        size_t dims[3];
        CU_ASSERT_EQUAL(idx_read(ip, 3, &data, dims), SS_EINPUT);
        CU_ASSERT(data == NULL);
        CU_ASSERT(message_has(ip));
        CU_ASSERT(message_has("truncated: expected 80 bytes of image data (5 x 4 x 4), found 50"));
    }
    /* A header cut in the middle of the dimensions. */
    const char *hp = tmp_path("idx", "short-head");
    uint8_t head[6] = {0, 0, 8, 3, 0, 0};
    write_file(hp, head, sizeof head, 0);
    uint8_t *data;
    size_t dims[3];
    CU_ASSERT_EQUAL(idx_read(hp, 3, &data, dims), SS_EINPUT);
    CU_ASSERT(message_has("16-byte IDX header"));
    /* One byte more than the header promises. */
    const char *lp = tmp_path("idx", "long-lab");
    uint32_t n[1] = {3};
    uint8_t lb[4] = {1, 2, 3, 4};
    write_idx(lp, 0x801, 1, n, lb, sizeof lb, 0);
    CU_ASSERT_EQUAL(idx_read(lp, 1, &data, dims), SS_EINPUT);
    CU_ASSERT(message_has("found more"));
}

static void test_idx_read_bad_magic(void) {
    uint8_t px[4] = {1, 2, 3, 4};
    uint32_t dims_hdr[3] = {1, 2, 2};
    const char *ip = tmp_path("idx", "img-as-labels");
    write_idx(ip, 0x803, 3, dims_hdr, px, sizeof px, 1);
    uint8_t *data;
    size_t dims[3];
    CU_ASSERT_EQUAL(idx_read(ip, 1, &data, dims), SS_EINPUT);
    CU_ASSERT(message_has(ip));
    CU_ASSERT(message_has("bad magic 0x00000803, expected 0x00000801"));
    const char *jp = tmp_path("idx", "not-idx");
    write_idx(jp, 0x89504e47, 3, dims_hdr, px, sizeof px, 0); /* a PNG signature */
    CU_ASSERT_EQUAL(idx_read(jp, 3, &data, dims), SS_EINPUT);
    CU_ASSERT(message_has("0x89504e47"));
    CU_ASSERT(message_has("0x00000803"));
    CU_ASSERT_EQUAL(idx_read(tmp_path("idx", "absent"), 3, &data, dims), SS_EINPUT);
    CU_ASSERT(message_has("absent"));
}

/* Writes an IDX set in tmp_dir/sub: train (gzip) n_train images 2x2, test (plain) n_test. */
static void write_idx_set(const char *sub, const uint8_t *px_train, const uint8_t *y_train,
                          uint32_t n_train, uint32_t n_train_labels, const uint8_t *px_test,
                          const uint8_t *y_test, uint32_t n_test) {
    uint32_t d[3] = {n_train, 2, 2}, l[1] = {n_train_labels};
    write_idx(tmp_path(sub, "train-images-idx3-ubyte.gz"), 0x803, 3, d, px_train, 4 * n_train, 1);
    write_idx(tmp_path(sub, "train-labels-idx1-ubyte.gz"), 0x801, 1, l, y_train, n_train_labels, 1);
    d[0] = l[0] = n_test;
    write_idx(tmp_path(sub, "t10k-images-idx3-ubyte"), 0x803, 3, d, px_test, 4 * n_test, 0);
    write_idx(tmp_path(sub, "t10k-labels-idx1-ubyte"), 0x801, 1, l, y_test, n_test, 0);
}

static void test_dataset_load_idx_dir(void) {
    /* Train pixels/255 are half 0, half 1: mean 0.5, std 0.5, so 0 -> -1 and 255 -> +1. */
    uint8_t px_train[8] = {0, 255, 0, 255, 255, 255, 0, 0}, y_train[2] = {3, 1};
    uint8_t px_test[4] = {51, 255, 0, 102}, y_test[1] = {2};
    write_idx_set("idxset", px_train, y_train, 2, 2, px_test, y_test, 1);
    char dir[256];
    snprintf(dir, sizeof dir, "%s/idxset", tmp_dir);
    dataset train, test;
    CU_ASSERT_EQUAL_FATAL(dataset_load(dir, NULL, 1, &train, &test), SS_OK);
    CU_ASSERT_STRING_EQUAL(train.name, "mnist");
    CU_ASSERT(train.n == 2 && test.n == 1);
    CU_ASSERT(train.c == 1 && train.h == 2 && train.w == 2 && test.h == 2);
    CU_ASSERT(train.classes == 4 && test.classes == 4); /* largest train label + 1 */
    CU_ASSERT(train.y[0] == 3 && train.y[1] == 1 && test.y[0] == 2);
    const float want_train[8] = {-1, 1, -1, 1, 1, 1, -1, -1};
    for (int i = 0; i < 8; i++)
        SS_CHECK_CLOSE(train.x[i], want_train[i], 1e-6, 0);
    const float want_test[4] = {-0.6f, 1.0f, -1.0f, -0.2f}; /* (p/255 - 0.5) / 0.5, train stats */
    for (int i = 0; i < 4; i++)
        SS_CHECK_CLOSE(test.x[i], want_test[i], 1e-6, 0);
    dataset_free(&train);
    dataset_free(&test);
    CU_ASSERT(train.x == NULL && train.n == 0);
}

static void test_dataset_load_idx_count_mismatch(void) {
    uint8_t px[12] = {0}, y[3] = {0, 1, 2};
    write_idx_set("mismatch", px, y, 3, 2, px, y, 1); /* 3 train images, 2 train labels */
    char dir[256];
    snprintf(dir, sizeof dir, "%s/mismatch", tmp_dir);
    dataset train, test;
    CU_ASSERT_EQUAL(dataset_load(dir, NULL, 1, &train, &test), SS_EINPUT);
    CU_ASSERT(message_has("train-images-idx3-ubyte.gz holds 3 images"));
    CU_ASSERT(message_has("train-labels-idx1-ubyte.gz holds 2 labels"));
    CU_ASSERT(train.x == NULL && test.x == NULL);
    /* A test label outside the train set's classes. */
    uint8_t y_bad[1] = {9};
    write_idx_set("badlabel", px, y, 3, 3, px, y_bad, 1);
    snprintf(dir, sizeof dir, "%s/badlabel", tmp_dir);
    CU_ASSERT_EQUAL(dataset_load(dir, NULL, 1, &train, &test), SS_EINPUT);
    CU_ASSERT(message_has("label 9"));
}

/* ---------------------------------------------------------------- CIFAR-10 */

/* Record r of a fixture: label r % 10, pixel j of channel ch = (r + ch * 7 + j) % 256. */
static void cifar_record(uint8_t *rec, size_t r) {
    rec[0] = (uint8_t)(r % 10);
    for (int ch = 0; ch < 3; ch++)
        for (int j = 0; j < 1024; j++)
            rec[1 + ch * 1024 + j] = (uint8_t)((r + ch * 7 + j) % 256);
}

static void write_cifar(const char *path, size_t first, size_t records, size_t cut_bytes) {
    uint8_t *buf = malloc(records * 3073);
    for (size_t r = 0; r < records; r++)
        cifar_record(buf + r * 3073, first + r);
    write_file(path, buf, records * 3073 - cut_bytes, 0);
    free(buf);
}

static void test_cifar10_read_batch(void) {
    const char *a = tmp_path("cifar", "a.bin"), *b = tmp_path("cifar", "b.bin");
    write_cifar(a, 0, 3, 0);
    write_cifar(b, 3, 2, 0);
    uint8_t *px = NULL, *lb = NULL, rec[3073];
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(cifar10_read_batch(a, &px, &lb, &n), SS_OK);
    CU_ASSERT_EQUAL_FATAL(cifar10_read_batch(b, &px, &lb, &n), SS_OK); /* appends */
    CU_ASSERT_EQUAL(n, 5);
    for (size_t r = 0; r < 5; r++) {
        cifar_record(rec, r);
        CU_ASSERT_EQUAL(lb[r], rec[0]);
        CU_ASSERT(memcmp(px + r * 3072, rec + 1, 3072) == 0);
    }
    const char *t = tmp_path("cifar", "cut.bin");
    write_cifar(t, 0, 2, 100);
    CU_ASSERT_EQUAL(cifar10_read_batch(t, &px, &lb, &n), SS_EINPUT);
    CU_ASSERT(message_has(t));
    CU_ASSERT(message_has("truncated: expected 30730000 bytes (10000 records"));
    CU_ASSERT(message_has("found 6046"));
    CU_ASSERT_EQUAL(n, 5); /* the arrays are left as they were */
    const char *bad = tmp_path("cifar", "label.bin");
    memset(rec, 0, sizeof rec);
    rec[0] = 10;
    write_file(bad, rec, sizeof rec, 0);
    CU_ASSERT_EQUAL(cifar10_read_batch(bad, &px, &lb, &n), SS_EINPUT);
    CU_ASSERT(message_has("label 10"));
    free(px);
    free(lb);
}

static void test_dataset_load_cifar_dir(void) {
    char name[32];
    for (int b = 1; b <= 5; b++) {
        snprintf(name, sizeof name, "data_batch_%d.bin", b);
        write_cifar(tmp_path("cifarset", name), (size_t)(b - 1) * 2, 2, 0);
    }
    write_cifar(tmp_path("cifarset", "test_batch.bin"), 100, 1, 0);
    char dir[256];
    snprintf(dir, sizeof dir, "%s/cifarset", tmp_dir);
    dataset train, test;
    CU_ASSERT_EQUAL_FATAL(dataset_load("cifar10", dir, 1, &train, &test), SS_OK);
    CU_ASSERT(train.n == 10 && test.n == 1);
    CU_ASSERT(train.c == 3 && train.h == 32 && train.w == 32 && train.classes == 10);
    for (size_t r = 0; r < 10; r++)
        CU_ASSERT_EQUAL(train.y[r], r % 10);
    /* Each channel is normalized to mean 0, std 1 over the train set. */
    for (int ch = 0; ch < 3; ch++) {
        double s = 0, sq = 0;
        for (size_t r = 0; r < 10; r++)
            for (int j = 0; j < 1024; j++) {
                double v = train.x[r * 3072 + ch * 1024 + j];
                s += v;
                sq += v * v;
            }
        SS_CHECK_CLOSE(s / 10240, 0.0, 1e-6, 0);
        SS_CHECK_CLOSE(sq / 10240, 1.0, 1e-5, 0);
    }
    dataset_free(&train);
    dataset_free(&test);
    /* The same directory found by its content, as a path. */
    CU_ASSERT_EQUAL_FATAL(dataset_load(dir, NULL, 1, &train, &test), SS_OK);
    CU_ASSERT_STRING_EQUAL(train.name, "cifar10");
    dataset_free(&train);
    dataset_free(&test);
    /* A batch cut at a record boundary is caught by its record count. */
    write_cifar(tmp_path("cifarset", "data_batch_3.bin"), 4, 1, 0);
    CU_ASSERT_EQUAL(dataset_load("cifar10", dir, 1, &train, &test), SS_EINPUT);
    CU_ASSERT(message_has("data_batch_3.bin: truncated: expected 6146 bytes"));
}

/* ---------------------------------------------------------------- real data, missing data */

static void test_dataset_load_fashion_mnist(void) {
    const char *dir = "/usr/share/datasets/fashion-mnist";
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        printf("\n  SKIP: %s not installed (apt-get install dataset-fashion-mnist) ", dir);
        return;
    }
    dataset train, test;
    CU_ASSERT_EQUAL_FATAL(dataset_load("fashion-mnist", NULL, 1, &train, &test), SS_OK);
    CU_ASSERT_STRING_EQUAL(train.name, "fashion-mnist");
    CU_ASSERT(train.n == 60000 && test.n == 10000);
    CU_ASSERT(train.classes == 10 && train.c == 1 && train.h == 28 && train.w == 28);
    size_t count = train.n * dataset_features(&train), per_class[10] = {0};
    double s = 0, sq = 0;
    for (size_t i = 0; i < count; i++) {
        s += train.x[i];
        sq += (double)train.x[i] * train.x[i];
    }
    double mean = s / count;
    SS_CHECK_CLOSE(mean, 0.0, 1e-4, 0);
    SS_CHECK_CLOSE(sqrt(sq / count - mean * mean), 1.0, 1e-4, 0);
    for (size_t i = 0; i < train.n; i++)
        per_class[train.y[i]]++;
    for (int k = 0; k < 10; k++)
        CU_ASSERT_EQUAL(per_class[k], 6000);
    s = 0;
    for (size_t i = 0; i < test.n * dataset_features(&test); i++)
        s += test.x[i];
    SS_CHECK_CLOSE(s / (test.n * 784.0), 0.0, 0.05, 0); /* train statistics, close on test */
    dataset_free(&train);
    dataset_free(&test);
}

static void test_dataset_load_missing(void) {
    dataset train, test;
    CU_ASSERT_EQUAL(dataset_load("fashion-mnist", "/nonexistent/ss-data", 1, &train, &test),
                    SS_EINPUT);
    CU_ASSERT(message_has("/nonexistent/ss-data/train-images-idx3-ubyte.gz"));
    CU_ASSERT(message_has("apt-get install dataset-fashion-mnist"));
    CU_ASSERT(message_has("--data-dir"));
    CU_ASSERT_EQUAL(dataset_load("mnist", "/nonexistent/ss-data", 1, &train, &test), SS_EINPUT);
    CU_ASSERT(message_has("no Debian package provides MNIST"));
    CU_ASSERT_EQUAL(dataset_load("cifar10", NULL, 1, &train, &test), SS_EUSAGE);
    CU_ASSERT(message_has("--data-dir"));
    CU_ASSERT_EQUAL(dataset_load("cifar10", "/nonexistent/ss-data", 1, &train, &test), SS_EINPUT);
    CU_ASSERT(message_has("/nonexistent/ss-data/cifar-10-batches-bin/data_batch_1.bin"));
    CU_ASSERT_EQUAL(dataset_load("imagenet", NULL, 1, &train, &test), SS_EUSAGE);
    CU_ASSERT(message_has("fashion-mnist, mnist, cifar10, synthetic"));
    CU_ASSERT_EQUAL(dataset_load(tmp_dir, NULL, 1, &train, &test), SS_EINPUT); /* no set there */
    CU_ASSERT(train.x == NULL && test.x == NULL);
}

/* ---------------------------------------------------------------- synthetic */

static void small_spec(synthetic_spec *s) {
    synthetic_spec_default(s);
    s->n_train = 500;
    s->n_test = 100;
    s->classes = 5;
    s->c = 1;
    s->h = 4;
    s->w = 4;
}

static void test_synthetic_determinism(void) {
    synthetic_spec s;
    small_spec(&s);
    dataset a, at, b, bt, c, ct;
    CU_ASSERT_EQUAL_FATAL(dataset_synthetic(&s, 42, &a, &at), SS_OK);
    CU_ASSERT_EQUAL_FATAL(dataset_synthetic(&s, 42, &b, &bt), SS_OK);
    CU_ASSERT_EQUAL_FATAL(dataset_synthetic(&s, 43, &c, &ct), SS_OK);
    CU_ASSERT(memcmp(a.x, b.x, a.n * 16 * sizeof(float)) == 0);
    CU_ASSERT(memcmp(a.y, b.y, a.n) == 0);
    CU_ASSERT(memcmp(at.x, bt.x, at.n * 16 * sizeof(float)) == 0);
    CU_ASSERT(memcmp(a.x, c.x, a.n * 16 * sizeof(float)) != 0);
    CU_ASSERT(memcmp(a.y, c.y, a.n) != 0);
    CU_ASSERT(memcmp(a.x, at.x, at.n * 16 * sizeof(float)) != 0); /* test is a fresh draw */
    CU_ASSERT_STRING_EQUAL(a.name, "synthetic");
    CU_ASSERT(a.n == 500 && at.n == 100 && a.classes == 5 && a.c == 1 && a.h == 4 && a.w == 4);
    size_t per_class[5] = {0}, per_class_test[5] = {0};
    for (size_t i = 0; i < a.n; i++) {
        CU_ASSERT_FATAL(a.y[i] < 5);
        per_class[a.y[i]]++;
    }
    for (size_t i = 0; i < at.n; i++) {
        CU_ASSERT_FATAL(at.y[i] < 5);
        per_class_test[at.y[i]]++;
    }
    for (int k = 0; k < 5; k++)
        CU_ASSERT(per_class[k] == 100 && per_class_test[k] == 20);
    int sorted = 1; /* labels come in seeded order, not sorted or cyclic */
    for (size_t i = 0; i < a.n; i++)
        sorted &= a.y[i] == i % 5;
    CU_ASSERT(!sorted);
    dataset_free(&a);
    dataset_free(&at);
    dataset_free(&b);
    dataset_free(&bt);
    dataset_free(&c);
    dataset_free(&ct);
    s.classes = 1;
    CU_ASSERT_EQUAL(dataset_synthetic(&s, 1, &a, &at), SS_EUSAGE);
    small_spec(&s);
    s.separation = 0;
    CU_ASSERT_EQUAL(dataset_synthetic(&s, 1, &a, &at), SS_EUSAGE);
}

/* At the defaults a linear classifier (nearest class mean estimated on the train set) must do
 * clearly better than chance and clearly worse than perfect. */
static void test_synthetic_defaults_learnable(void) {
    dataset train, test;
    CU_ASSERT_EQUAL_FATAL(dataset_load("synthetic", NULL, 3, &train, &test), SS_OK);
    CU_ASSERT(train.n == 8000 && test.n == 2000 && train.classes == 10);
    CU_ASSERT(train.c == 1 && train.h == 28 && train.w == 28);
    size_t dim = dataset_features(&train);
    double *mean = calloc(10 * dim, sizeof(double));
    size_t count[10] = {0};
    for (size_t i = 0; i < train.n; i++) {
        count[train.y[i]]++;
        for (size_t j = 0; j < dim; j++)
            mean[train.y[i] * dim + j] += train.x[i * dim + j];
    }
    for (int k = 0; k < 10; k++)
        for (size_t j = 0; j < dim; j++)
            mean[k * dim + j] /= (double)count[k];
    size_t right = 0;
    for (size_t i = 0; i < test.n; i++) {
        int best = -1;
        double best_d = INFINITY;
        for (int k = 0; k < 10; k++) {
            double d = 0;
            for (size_t j = 0; j < dim; j++) {
                double e = test.x[i * dim + j] - mean[k * dim + j];
                d += e * e;
            }
            if (d < best_d) best_d = d, best = k;
        }
        right += best == test.y[i];
    }
    double acc = (double)right / test.n;
    printf("\n  nearest-mean test accuracy on default synthetic: %.3f ", acc);
    CU_ASSERT(acc > 0.75 && acc < 0.98);
    free(mean);
    dataset_free(&train);
    dataset_free(&test);
}

/* ---------------------------------------------------------------- partitions */

/* A label-only training set: n samples, K classes, y[i] = (i * 7) % K (balanced for K | n). */
static dataset labels_only(size_t n, int classes) {
    dataset d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "labels");
    d.n = n;
    d.c = d.h = d.w = 1;
    d.classes = classes;
    d.y = malloc(n);
    for (size_t i = 0; i < n; i++)
        d.y[i] = (uint8_t)((i * 7) % (size_t)classes);
    return d;
}

static void test_partition_parse(void) {
    partition_kind kind;
    double k;
    CU_ASSERT(partition_parse("defdp", &kind, &k) == SS_OK && kind == PARTITION_DEFDP);
    CU_ASSERT(partition_parse("seldp", &kind, &k) == SS_OK && kind == PARTITION_SELDP);
    CU_ASSERT(partition_parse("seldp-perm", &kind, &k) == SS_OK && kind == PARTITION_SELDP_PERM);
    CU_ASSERT(partition_parse("noniid:3", &kind, &k) == SS_OK && kind == PARTITION_NONIID &&
              k == 3);
    CU_ASSERT(partition_parse("dirichlet:0.5", &kind, &k) == SS_OK && kind == PARTITION_DIRICHLET &&
              k == 0.5);
    const char *bad_alpha[] = {"dirichlet", "dirichlet:0", "dirichlet:-1", "dirichlet:x",
                               "dirichlet:1e9"};
    for (size_t i = 0; i < sizeof bad_alpha / sizeof bad_alpha[0]; i++) {
        CU_ASSERT_EQUAL(partition_parse(bad_alpha[i], &kind, &k), SS_EUSAGE);
        CU_ASSERT(message_has("dirichlet:"));
    }
    const char *bad[] = {"noniid", "noniid:0", "noniid:x", "noniid:2x", "bsp", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(partition_parse(bad[i], &kind, &k), SS_EUSAGE);
        CU_ASSERT(message_has("noniid:"));
    }
    CU_ASSERT_EQUAL(partition_parse("bsp", &kind, &k), SS_EUSAGE);
    CU_ASSERT(message_has("defdp, seldp, seldp-perm, noniid:K"));
    CU_ASSERT_STRING_EQUAL(partition_kind_name(PARTITION_SELDP_PERM), "seldp-perm");
    CU_ASSERT_STRING_EQUAL(partition_kind_name(PARTITION_NONIID), "noniid");
}

static void test_partition_defdp(void) {
    dataset d = labels_only(1000, 10);
    partition *p;
    CU_ASSERT_EQUAL_FATAL(partition_create(&d, 7, PARTITION_DEFDP, 0, 5, &p), SS_OK);
    int *seen = calloc(d.n, sizeof(int));
    for (int w = 0; w < 7; w++) {
        size_t size = partition_worker_size(p, w);
        CU_ASSERT(size == 142 || size == 143);
        const size_t *idx = partition_worker_indices(p, w);
        for (size_t i = 0; i < size; i++) {
            CU_ASSERT_FATAL(idx[i] < d.n);
            seen[idx[i]]++;
            CU_ASSERT_EQUAL(partition_owner(p, idx[i]), w);
        }
    }
    int exact = 1;
    for (size_t i = 0; i < d.n; i++)
        exact &= seen[i] == 1;
    CU_ASSERT(exact); /* disjoint and covering */
    /* IID: shards are shuffled, not consecutive ranges. */
    const size_t *first = partition_worker_indices(p, 0);
    int consecutive = 1;
    for (size_t i = 1; i < 10; i++)
        consecutive &= first[i] == first[i - 1] + 1;
    CU_ASSERT(!consecutive);
    partition_destroy(p);
    free(seen);
    CU_ASSERT_EQUAL(partition_create(&d, 1001, PARTITION_DEFDP, 0, 5, &p), SS_EUSAGE);
    CU_ASSERT(p == NULL);
    CU_ASSERT_EQUAL(partition_create(&d, 0, PARTITION_SELDP, 0, 5, &p), SS_EUSAGE);
    dataset_free(&d);
}

static void test_partition_seldp_rotation(void) {
    enum { N = 4, B = 32, STEPS = 100 };
    dataset d = labels_only(1003, 10); /* C = 250; 3 samples left over */
    partition *p;
    CU_ASSERT_EQUAL_FATAL(partition_create(&d, N, PARTITION_SELDP, 0, 9, &p), SS_OK);
    const size_t chunk = 250;
    size_t per_chunk[N] = {0}, unowned = 0;
    for (size_t i = 0; i < d.n; i++) {
        int o = partition_owner(p, i);
        CU_ASSERT_FATAL(o >= -1 && o < N);
        if (o < 0)
            unowned++;
        else
            per_chunk[o]++;
    }
    CU_ASSERT_EQUAL(unowned, 3);
    for (int c = 0; c < N; c++)
        CU_ASSERT_EQUAL(per_chunk[c], chunk);
    for (int w = 0; w < N; w++) {
        CU_ASSERT_EQUAL_FATAL(partition_worker_size(p, w), N * chunk);
        const size_t *idx = partition_worker_indices(p, w);
        CU_ASSERT_EQUAL(partition_owner(p, idx[0]), w); /* starts in chunk w */
        int rotation = 1;
        for (size_t i = 0; i < N * chunk; i++)
            rotation &= partition_owner(p, idx[i]) == (int)((w + i / chunk) % N);
        CU_ASSERT(rotation); /* chunks w, w+1, ..., w-1 */
    }
    /* Through the iterators: step t, slot j of worker w lies in chunk (w + (t B + j) / C) mod N,
     * so the N workers are in N distinct chunks at every step, past the end of a pass too. */
    batch_iter *it[N];
    for (int w = 0; w < N; w++)
        it[w] = batch_iter_create(p, w, 11);
    size_t idx[N][B];
    int rule = 1, distinct = 1;
    for (size_t t = 0; t < STEPS; t++) {
        for (int w = 0; w < N; w++)
            batch_iter_next(it[w], idx[w], B);
        for (size_t j = 0; j < B; j++) {
            int used = 0;
            for (int w = 0; w < N; w++) {
                int o = partition_owner(p, idx[w][j]);
                rule &= o == (int)((w + (t * B + j) / chunk) % N);
                used |= 1 << o;
            }
            distinct &= used == (1 << N) - 1;
        }
    }
    CU_ASSERT(rule);
    CU_ASSERT(distinct);
    CU_ASSERT_EQUAL(batch_iter_passes(it[0]), STEPS * B / (N * chunk)); /* 3200 / 1000 */
    for (int w = 0; w < N; w++)
        batch_iter_destroy(it[w]);
    partition_destroy(p);
    dataset_free(&d);
}

static void test_partition_seldp_perm(void) {
    dataset d = labels_only(500, 10);
    partition *p;
    CU_ASSERT_EQUAL_FATAL(partition_create(&d, 3, PARTITION_SELDP_PERM, 0, 4, &p), SS_OK);
    int *seen = malloc(d.n * sizeof(int));
    for (int w = 0; w < 3; w++) {
        CU_ASSERT_EQUAL_FATAL(partition_worker_size(p, w), d.n);
        const size_t *idx = partition_worker_indices(p, w);
        memset(seen, 0, d.n * sizeof(int));
        for (size_t i = 0; i < d.n; i++)
            seen[idx[i]]++;
        int perm = 1;
        for (size_t i = 0; i < d.n; i++)
            perm &= seen[i] == 1;
        CU_ASSERT(perm);
    }
    for (int w = 1; w < 3; w++) {
        const size_t *a = partition_worker_indices(p, 0), *b = partition_worker_indices(p, w);
        size_t same = 0;
        for (size_t i = 0; i < d.n; i++)
            same += a[i] == b[i];
        CU_ASSERT(same < d.n / 10); /* independent permutations agree in ~1 place */
    }
    CU_ASSERT_EQUAL(partition_owner(p, 0), -1);
    free(seen);
    partition_destroy(p);
    dataset_free(&d);
}

/* Checks a NONIID partition: k labels per worker, samples covered exactly once, every label
 * held, and (when N k is a multiple of K, so every label has as many holders) balanced sizes. */
static void check_noniid(const dataset *d, int workers, int k) {
    partition *p;
    CU_ASSERT_EQUAL_FATAL(partition_create(d, workers, PARTITION_NONIID, k, 8, &p), SS_OK);
    int *seen = calloc(d->n, sizeof(int)), held[256] = {0};
    size_t size0 = partition_worker_size(p, 0);
    for (int w = 0; w < workers; w++) {
        int has[256] = {0}, labels = 0;
        size_t size = partition_worker_size(p, w);
        const size_t *idx = partition_worker_indices(p, w);
        for (size_t i = 0; i < size; i++) {
            seen[idx[i]]++;
            CU_ASSERT_EQUAL(partition_owner(p, idx[i]), w);
            if (!has[d->y[idx[i]]]++) labels++;
        }
        CU_ASSERT_EQUAL(labels, k > d->classes ? d->classes : k);
        for (int c = 0; c < d->classes; c++)
            held[c] += has[c] > 0;
        /* Each label's split differs by at most one sample between its holders. */
        if ((workers * k) % d->classes == 0)
            CU_ASSERT(size <= size0 + (size_t)k && size0 <= size + (size_t)k);
    }
    int exact = 1;
    for (size_t i = 0; i < d->n; i++)
        exact &= seen[i] == 1;
    CU_ASSERT(exact);
    for (int c = 0; c < d->classes; c++)
        CU_ASSERT(held[c] >= 1);
    free(seen);
    partition_destroy(p);
}

/* Per worker: how many classes hold more than 5 % of its samples, averaged over the workers. */
static double classes_per_worker(const partition *p, const dataset *d, int workers) {
    double sum = 0;
    for (int w = 0; w < workers; w++) {
        size_t n = partition_worker_size(p, w), per[256] = {0};
        const size_t *idx = partition_worker_indices(p, w);
        for (size_t i = 0; i < n; i++)
            per[d->y[idx[i]]]++;
        for (int k = 0; k < d->classes; k++)
            sum += (double)per[k] > 0.05 * (double)n;
    }
    return sum / workers;
}

/* DIRICHLET: a disjoint cover of the set, every worker with at least min(10, n/2N) samples, the
 * same for a seed, skewed at small alpha (few classes per worker) and near IID at large alpha. */
static void test_partition_dirichlet(void) {
    dataset d = labels_only(6000, 10);
    const int workers = 20;
    double seen[3];
    const double alphas[3] = {0.1, 0.5, 100};
    for (int a = 0; a < 3; a++) {
        partition *p = NULL, *q = NULL;
        CU_ASSERT_EQUAL_FATAL(partition_create(&d, workers, PARTITION_DIRICHLET, alphas[a], 7, &p),
                              SS_OK);
        CU_ASSERT_EQUAL_FATAL(partition_create(&d, workers, PARTITION_DIRICHLET, alphas[a], 7, &q),
                              SS_OK);
        int *hits = calloc(d.n, sizeof(int));
        size_t total = 0;
        for (int w = 0; w < workers; w++) {
            size_t n = partition_worker_size(p, w);
            const size_t *idx = partition_worker_indices(p, w);
            CU_ASSERT(n >= 10);
            CU_ASSERT_EQUAL(n, partition_worker_size(q, w));
            CU_ASSERT(memcmp(idx, partition_worker_indices(q, w), n * sizeof(size_t)) == 0);
            for (size_t i = 0; i < n; i++) {
                hits[idx[i]]++;
                CU_ASSERT_EQUAL(partition_owner(p, idx[i]), w);
            }
            total += n;
        }
        CU_ASSERT_EQUAL(total, d.n);
        int once = 1;
        for (size_t i = 0; i < d.n; i++)
            once &= hits[i] == 1;
        CU_ASSERT(once);
        free(hits);
        seen[a] = classes_per_worker(p, &d, workers);
        partition_destroy(p);
        partition_destroy(q);
    }
    printf("\n  classes above 5 %% of a worker's samples, alpha 0.1 / 0.5 / 100: %.2f / %.2f / "
           "%.2f ",
           seen[0], seen[1], seen[2]);
    CU_ASSERT(seen[0] < 3.5);
    CU_ASSERT(seen[0] < seen[1] && seen[1] < seen[2]);
    CU_ASSERT(seen[2] > 9.5);
    /* another seed, another split */
    partition *p = NULL, *q = NULL;
    CU_ASSERT_EQUAL_FATAL(partition_create(&d, workers, PARTITION_DIRICHLET, 0.5, 7, &p), SS_OK);
    CU_ASSERT_EQUAL_FATAL(partition_create(&d, workers, PARTITION_DIRICHLET, 0.5, 8, &q), SS_OK);
    CU_ASSERT(partition_worker_size(p, 0) != partition_worker_size(q, 0) ||
              memcmp(partition_worker_indices(p, 0), partition_worker_indices(q, 0),
                     partition_worker_size(p, 0) * sizeof(size_t)) != 0);
    partition_destroy(p);
    partition_destroy(q);
    /* too few samples for the workers: refused, naming the form */
    CU_ASSERT_EQUAL(partition_create(&d, 4000, PARTITION_DIRICHLET, 0.5, 7, &p), SS_EUSAGE);
    CU_ASSERT(message_has("dirichlet:0.5"));
    free(d.y);
}

static void test_partition_noniid(void) {
    dataset d = labels_only(1000, 10);
    check_noniid(&d, 20, 1); /* each label on 2 workers, 50 samples each */
    partition *p;
    CU_ASSERT_EQUAL_FATAL(partition_create(&d, 20, PARTITION_NONIID, 1, 8, &p), SS_OK);
    for (int w = 0; w < 20; w++)
        CU_ASSERT_EQUAL(partition_worker_size(p, w), 50);
    partition_destroy(p);
    check_noniid(&d, 10, 1);
    check_noniid(&d, 5, 2);
    check_noniid(&d, 4, 3); /* 12 slots over 10 labels: two labels on 2 workers */
    check_noniid(&d, 3, 10);
    CU_ASSERT_EQUAL(partition_create(&d, 3, PARTITION_NONIID, 2, 8, &p), SS_EUSAGE);
    CU_ASSERT(message_has("need workers x k >= 10"));
    CU_ASSERT_EQUAL(partition_create(&d, 3, PARTITION_NONIID, 11, 8, &p), SS_EUSAGE);
    CU_ASSERT_EQUAL(partition_create(&d, 3, PARTITION_NONIID, 0, 8, &p), SS_EUSAGE);
    /* The label order is seeded: with k = 1 worker 0's label depends on the seed. */
    int label_by_seed[8];
    for (uint64_t s = 0; s < 8; s++) {
        CU_ASSERT_EQUAL_FATAL(partition_create(&d, 10, PARTITION_NONIID, 1, s, &p), SS_OK);
        label_by_seed[s] = d.y[partition_worker_indices(p, 0)[0]];
        partition_destroy(p);
    }
    int all_same = 1;
    for (int s = 1; s < 8; s++)
        all_same &= label_by_seed[s] == label_by_seed[0];
    CU_ASSERT(!all_same);
    dataset_free(&d);
}

/* ---------------------------------------------------------------- batch iterator */

static void test_batch_iter(void) {
    dataset d = labels_only(600, 10);
    partition *p;
    CU_ASSERT_EQUAL_FATAL(partition_create(&d, 3, PARTITION_DEFDP, 0, 2, &p), SS_OK);
    batch_iter *a = batch_iter_create(p, 1, 77), *b = batch_iter_create(p, 1, 77);
    batch_iter *other_worker = batch_iter_create(p, 2, 77),
               *other_seed = batch_iter_create(p, 1, 78);
    size_t xa[50], xb[50], xw[50], xs[50];
    int same = 1, diff_w = 0, diff_s = 0;
    for (int t = 0; t < 20; t++) { /* 1000 draws: 5 passes over 200 indices */
        batch_iter_next(a, xa, 50);
        batch_iter_next(b, xb, 50);
        batch_iter_next(other_worker, xw, 50);
        batch_iter_next(other_seed, xs, 50);
        same &= memcmp(xa, xb, sizeof xa) == 0;
        diff_w |= memcmp(xa, xw, sizeof xa) != 0;
        diff_s |= memcmp(xa, xs, sizeof xa) != 0;
    }
    CU_ASSERT(same);
    CU_ASSERT(diff_w);
    CU_ASSERT(diff_s);
    CU_ASSERT_EQUAL(batch_iter_passes(a), 5);
    batch_iter_destroy(a);
    batch_iter_destroy(b);
    batch_iter_destroy(other_worker);
    batch_iter_destroy(other_seed);

    /* One pass, in batches of 7 that do not divide it, reads every index exactly once; the
     * next pass reads them again in another order. */
    size_t size = partition_worker_size(p, 0);
    const size_t *mine = partition_worker_indices(p, 0);
    int *seen = calloc(d.n, sizeof(int));
    size_t *pass0 = malloc(size * sizeof(size_t)), *pass1 = malloc(size * sizeof(size_t));
    batch_iter *it = batch_iter_create(p, 0, 3);
    for (size_t at = 0; at < size; at += 7) {
        int batch = (int)(size - at < 7 ? size - at : 7);
        CU_ASSERT_EQUAL(batch_iter_passes(it), 0);
        batch_iter_next(it, pass0 + at, batch);
    }
    CU_ASSERT_EQUAL(batch_iter_passes(it), 1);
    batch_iter_next(it, pass1, (int)size);
    CU_ASSERT_EQUAL(batch_iter_passes(it), 2);
    for (size_t i = 0; i < size; i++)
        seen[pass0[i]]++;
    for (size_t i = 0; i < size; i++)
        seen[mine[i]] += 10;
    int once = 1;
    for (size_t i = 0; i < d.n; i++)
        once &= seen[i] == 0 || seen[i] == 11;
    CU_ASSERT(once);
    CU_ASSERT(memcmp(pass0, pass1, size * sizeof(size_t)) != 0);
    CU_ASSERT(memcmp(pass0, mine, size * sizeof(size_t)) != 0); /* shuffled */
    batch_iter_destroy(it);
    free(seen);
    free(pass0);
    free(pass1);
    partition_destroy(p);
    dataset_free(&d);
}

static void test_dataset_gather(void) {
    synthetic_spec s;
    small_spec(&s);
    dataset train, test;
    CU_ASSERT_EQUAL_FATAL(dataset_synthetic(&s, 5, &train, &test), SS_OK);
    size_t idx[3] = {7, 2, 499};
    float x[3 * 16];
    uint8_t y[3];
    dataset_gather(&train, idx, 3, x, y);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT(memcmp(x + i * 16, train.x + idx[i] * 16, 16 * sizeof(float)) == 0);
        CU_ASSERT_EQUAL(y[i], train.y[idx[i]]);
    }
    dataset_free(&train);
    dataset_free(&test);
}

static CU_TestInfo readers_tests[] = {
    {"idx_read: values, plain and gzip", test_idx_read_values},
    {"idx_read: truncated and overlong files", test_idx_read_truncated},
    {"idx_read: bad magic, missing file", test_idx_read_bad_magic},
    {"dataset_load: IDX directory, normalization", test_dataset_load_idx_dir},
    {"dataset_load: image/label count mismatch", test_dataset_load_idx_count_mismatch},
    {"cifar10_read_batch: values, append, truncated", test_cifar10_read_batch},
    {"dataset_load: CIFAR-10 directory", test_dataset_load_cifar_dir},
    {"dataset_load: Fashion-MNIST from Debian", test_dataset_load_fashion_mnist},
    {"dataset_load: missing data names the package", test_dataset_load_missing},
    CU_TEST_INFO_NULL};

static CU_TestInfo synthetic_tests[] = {
    {"dataset_synthetic: determinism, shapes, balance", test_synthetic_determinism},
    {"dataset_load synthetic: learnable, not trivial", test_synthetic_defaults_learnable},
    {"dataset_gather: rows and labels", test_dataset_gather},
    CU_TEST_INFO_NULL};

static CU_TestInfo partition_tests[] = {
    {"partition_parse", test_partition_parse},
    {"partition_create DEFDP: disjoint cover", test_partition_defdp},
    {"partition_create SELDP: chunk rotation", test_partition_seldp_rotation},
    {"partition_create SELDP_PERM: permutations", test_partition_seldp_perm},
    {"partition_create NONIID: k labels per worker", test_partition_noniid},
    {"partition_create DIRICHLET: label skew by alpha", test_partition_dirichlet},
    {"batch_iter: determinism and passes", test_batch_iter},
    CU_TEST_INFO_NULL};

int main(void) {
    CU_SuiteInfo suites[] = {{"data readers", suite_init, suite_cleanup, NULL, NULL, readers_tests},
                             {"synthetic", NULL, NULL, NULL, NULL, synthetic_tests},
                             {"partitions", NULL, NULL, NULL, NULL, partition_tests},
                             CU_SUITE_INFO_NULL};
    return ss_test_main(suites);
}
