/* Text sets for language models (dataset.h): the World English Bible from Debian's
 * sword-text-web (a SWORD zText module: per testament, NN.bzs holds 12-byte records, little
 * endian, of a zlib block's offset, size and inflated size in NN.bzz; the text is OSIS XML),
 * WikiText-2/103 and Penn Treebank files. Tokens are words; a word-level vocabulary is built from
 * the training split, ids in order of first appearance. */
#include "emu/dataset.h"

#include "common/status.h"
#include "kernels/model.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define TEXT_DEFAULT_WINDOW 35
#define WEB_BLOCK_WORDS     10000
#define WEB_MIN_COUNT       2
#define WEB_DIR             "/usr/share/sword/modules/texts/ztext/engWEB2015eb"
#define PATH_BYTES          4096

/* ---- a growing byte buffer and a word table (open addressing) ---- */

typedef struct text_buf {
    char *p;
    size_t len, cap;
} text_buf;

static void buf_put(text_buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        char *q = realloc(b->p, b->cap);
        if (!q) abort();
        b->p = q;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

typedef struct vocab {
    char **words; /* id -> word */
    size_t *count;
    int n, cap;
    int *slots; /* hash -> id + 1 */
    size_t n_slots;
} vocab;

static uint64_t hash_word(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static void vocab_grow(vocab *v);

/* the id of word s[0..n), added when add (else -1 when unknown) */
static int vocab_id(vocab *v, const char *s, size_t n, int add) {
    if (!v->slots) vocab_grow(v);
    size_t i = hash_word(s, n) & (v->n_slots - 1);
    for (; v->slots[i]; i = (i + 1) & (v->n_slots - 1)) {
        const char *w = v->words[v->slots[i] - 1];
        if (strlen(w) == n && !memcmp(w, s, n)) return v->slots[i] - 1;
    }
    if (!add) return -1;
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 1024;
        v->words = realloc(v->words, (size_t)v->cap * sizeof *v->words);
        v->count = realloc(v->count, (size_t)v->cap * sizeof *v->count);
        if (!v->words || !v->count) abort();
    }
    char *w = ss_malloc(n + 1);
    memcpy(w, s, n);
    w[n] = '\0';
    v->words[v->n] = w;
    v->count[v->n] = 0;
    v->slots[i] = ++v->n;
    if ((size_t)v->n * 2 > v->n_slots) vocab_grow(v);
    return v->n - 1;
}

static void vocab_grow(vocab *v) {
    size_t n = v->n_slots ? 2 * v->n_slots : 4096;
    free(v->slots);
    v->slots = ss_calloc(n, sizeof *v->slots);
    v->n_slots = n;
    for (int id = 0; id < v->n; id++) {
        const char *w = v->words[id];
        size_t i = hash_word(w, strlen(w)) & (n - 1);
        while (v->slots[i])
            i = (i + 1) & (n - 1);
        v->slots[i] = id + 1;
    }
}

static void vocab_free(vocab *v) {
    for (int i = 0; i < v->n; i++)
        free(v->words[i]);
    free(v->words);
    free(v->count);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

/* ---- splitting text into words ---- */

/* Bytes of the UTF-8 sequence at s[i] (1 for ASCII). */
static size_t utf8_len(const char *s, size_t len, size_t i) {
    size_t j = i + 1;
    if ((unsigned char)s[i] >= 0xc0)
        while (j < len && ((unsigned char)s[j] & 0xc0) == 0x80)
            j++;
    return j - i;
}

/* A letter of a word: ASCII letters and digits, and Latin-1 letters (UTF-8 0xc3 ..). */
static size_t word_char(const char *s, size_t len, size_t i) {
    unsigned char c = (unsigned char)s[i];
    if (isalnum(c)) return 1;
    return c == 0xc3 ? utf8_len(s, len, i) : 0;
}

/* An apostrophe inside a word (' or U+2019 followed by a letter): its bytes, else 0. */
static size_t inner_apostrophe(const char *s, size_t len, size_t i) {
    size_t n = s[i] == '\'' ? 1
               : (i + 2 < len && (unsigned char)s[i] == 0xe2 && (unsigned char)s[i + 1] == 0x80 &&
                  (unsigned char)s[i + 2] == 0x99)
                   ? 3
                   : 0;
    return n && i + n < len && word_char(s, len, i + n) ? n : 0;
}

/* The next token of s at *pos: a word (letters, digits, inner apostrophes), one punctuation
 * character (a whole UTF-8 sequence), or "\n" for a line end; with lines (pre-tokenized files)
 * anything between whitespace. 0 at the end. */
static size_t next_token(const char *s, size_t len, size_t *pos, const char **tok, int lines) {
    size_t i = *pos;
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
        i++;
    if (i >= len) return *pos = i, 0;
    *tok = s + i;
    size_t j = i, k;
    if (s[i] == '\n') {
        j = i + 1;
    } else if (lines) {
        while (j < len && s[j] != ' ' && s[j] != '\t' && s[j] != '\n' && s[j] != '\r')
            j++;
    } else if (word_char(s, len, i)) {
        for (;;) {
            if (j < len && (k = word_char(s, len, j)) > 0)
                j += k;
            else if (j < len && (k = inner_apostrophe(s, len, j)) > 0)
                j += k;
            else
                break;
        }
    } else {
        j = i + utf8_len(s, len, i);
    }
    *pos = j;
    return j - i;
}

/* ---- the World English Bible ---- */

static int read_file(const char *path, unsigned char **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return ss_error_set(SS_EINPUT, "%s: cannot open", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = ss_malloc((size_t)(n > 0 ? n : 1));
    *len = n > 0 ? fread(*out, 1, (size_t)n, f) : 0;
    fclose(f);
    if ((long)*len != n) {
        free(*out);
        return ss_error_set(SS_EINPUT, "%s: short read", path);
    }
    return SS_OK;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Appends the OSIS text of testament `which` ("ot", "nt") with markup removed: notes dropped,
 * a newline at each paragraph, line or title end, a space for other tags. */
static int read_ztext(const char *dir, const char *which, text_buf *out) {
    char ps[PATH_BYTES], pz[PATH_BYTES];
    snprintf(ps, sizeof ps, "%s/%s.bzs", dir, which);
    snprintf(pz, sizeof pz, "%s/%s.bzz", dir, which);
    unsigned char *idx, *z;
    size_t ni, nz;
    int rc = read_file(ps, &idx, &ni);
    if (rc != SS_OK) return rc;
    if ((rc = read_file(pz, &z, &nz)) != SS_OK) {
        free(idx);
        return rc;
    }
    for (size_t r = 0; r + 12 <= ni && rc == SS_OK; r += 12) {
        uint32_t off = le32(idx + r), size = le32(idx + r + 4), usize = le32(idx + r + 8);
        if ((size_t)off + size > nz || usize > (1u << 28)) {
            rc = ss_error_set(SS_EINPUT, "%s: block %zu out of range of %s", ps, r / 12, pz);
            break;
        }
        uLongf got = usize;
        char *block = ss_malloc(usize + 1);
        if (uncompress((Bytef *)block, &got, z + off, size) != Z_OK || got != usize) {
            rc = ss_error_set(SS_EINPUT, "%s: block %zu does not inflate", pz, r / 12);
        } else {
            int in_note = 0;
            for (size_t i = 0; i < got;) {
                if (block[i] != '<') {
                    if (!in_note) buf_put(out, block + i, 1);
                    i++;
                    continue;
                }
                size_t j = i;
                while (j < got && block[j] != '>')
                    j++;
                const char *tag = block + i + 1;
                if (!strncmp(tag, "note", 4)) in_note = block[j - 1] != '/';
                if (!strncmp(tag, "/note", 5)) in_note = 0;
                int line_end = !strncmp(tag, "/l>", 3) || !strncmp(tag, "/title", 6) ||
                               (!strncmp(tag, "div eID", 7)) || !strncmp(tag, "lb", 2);
                buf_put(out, line_end ? "\n" : " ", 1);
                i = j + 1;
            }
        }
        free(block);
    }
    free(idx);
    free(z);
    return rc;
}

/* ---- token streams ---- */

typedef struct stream {
    uint32_t *t;
    size_t n, cap;
} stream;

static void stream_put(stream *s, uint32_t id) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1 << 16;
        s->t = realloc(s->t, s->cap * sizeof *s->t);
        if (!s->t) abort();
    }
    s->t[s->n++] = id;
}

/* Tokenizes text into ids of v (<eos> for a line end; adding words when add, else <unk>). */
static void tokenize(vocab *v, const char *text, size_t len, int lines, int add, stream *out) {
    size_t pos = 0;
    const char *tok;
    size_t n;
    const int eos = vocab_id(v, "<eos>", 5, 1), unk = vocab_id(v, "<unk>", 5, 1);
    int last_eos = 1;
    while ((n = next_token(text, len, &pos, &tok, lines)) > 0) {
        if (*tok == '\n') {
            if (!last_eos) stream_put(out, (uint32_t)eos);
            last_eos = 1;
            continue;
        }
        int id = vocab_id(v, tok, n, add);
        if (id < 0) id = unk;
        v->count[id]++;
        stream_put(out, (uint32_t)id);
        last_eos = 0;
    }
    if (!last_eos) stream_put(out, (uint32_t)eos);
}

static void to_dataset(dataset *d, const char *name, stream *s, int vocab_size) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->tokens = s->t;
    d->n_tokens = s->n;
    d->classes = vocab_size;
    memset(s, 0, sizeof *s);
    dataset_set_window(d, TEXT_DEFAULT_WINDOW);
}

void dataset_set_window(dataset *d, int t) {
    SS_ASSERT(d->tokens && t >= 1);
    free(d->x);
    free(d->y);
    d->n = d->n_tokens > 1 ? (d->n_tokens - 1) / (size_t)t : 0;
    d->c = d->h = 1;
    d->w = t + 1;
    d->x = ss_malloc((d->n * (size_t)(t + 1) + 1) * sizeof(float));
    d->y = ss_calloc(d->n + 1, 1);
    for (size_t i = 0; i < d->n; i++)
        for (int j = 0; j <= t; j++)
            d->x[i * (t + 1) + j] = (float)d->tokens[i * t + j];
}

/* Maps ids of words seen fewer than min_count times in the training stream to <unk> and renumbers
 * the rest densely, in order of first appearance. */
static int prune(vocab *v, stream *train, stream *other[2], int min_count) {
    int *map = ss_malloc((size_t)v->n * sizeof(int)), n = 0;
    const int unk = vocab_id(v, "<unk>", 5, 0), eos = vocab_id(v, "<eos>", 5, 0);
    for (int i = 0; i < v->n; i++)
        map[i] = (v->count[i] >= (size_t)min_count || i == unk || i == eos) ? n++ : -1;
    for (int i = 0; i < v->n; i++)
        if (map[i] < 0) map[i] = map[unk];
    stream *all[3] = {train, other[0], other[1]};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < all[k]->n; i++)
            all[k]->t[i] = (uint32_t)map[all[k]->t[i]];
    free(map);
    return n;
}

static int load_web(const char *dir, dataset *train, dataset *test) {
    text_buf text = {0};
    int rc = read_ztext(dir, "ot", &text);
    if (rc == SS_OK) rc = read_ztext(dir, "nt", &text);
    if (rc != SS_OK) {
        free(text.p);
        return ss_error_set(SS_EINPUT,
                            "%s (web-bible reads the World English Bible of Debian's "
                            "sword-text-web: apt-get install sword-text-web, or --data-dir DIR "
                            "holding ot.bzs, ot.bzz, nt.bzs, nt.bzz)",
                            ss_error_message());
    }
    /* blocks of WEB_BLOCK_WORDS words: k mod 20 == 18 validation, 19 test, else training; the
     * training blocks first, so that ids follow the training text */
    vocab v = {0};
    stream s[3] = {{0}}; /* train, valid, test */
    for (int pass = 0; pass < 2; pass++) {
        size_t pos = 0, block_start = 0, words = 0, block = 0;
        const char *tok;
        size_t n;
        while (1) {
            size_t before = pos;
            n = next_token(text.p, text.len, &pos, &tok, 0);
            if (n && *tok != '\n') words++;
            if (!n || words == WEB_BLOCK_WORDS) {
                int which = block % 20 == 18 ? 1 : block % 20 == 19 ? 2 : 0;
                if ((which == 0) == (pass == 0))
                    tokenize(&v, text.p + block_start, (n ? pos : before) - block_start, 0,
                             pass == 0, &s[which]);
                block_start = n ? pos : before;
                words = 0;
                block++;
            }
            if (!n) break;
        }
    }
    free(text.p);
    stream *other[2] = {&s[1], &s[2]};
    int size = prune(&v, &s[0], other, WEB_MIN_COUNT);
    vocab_free(&v);
    to_dataset(train, "web-bible", &s[0], size);
    to_dataset(test, "web-bible", &s[1], size); /* validation */
    free(s[2].t);
    return SS_OK;
}

/* ---- WikiText and PTB files ---- */

static int load_lines(const char *name, const char *dir, const char *const files[3], dataset *train,
                      dataset *test) {
    vocab v = {0};
    stream s[3] = {{0}};
    int rc = SS_OK;
    for (int k = 0; k < 3 && rc == SS_OK; k++) {
        char path[PATH_BYTES];
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        unsigned char *text;
        size_t len;
        rc = read_file(path, &text, &len);
        if (rc != SS_OK) {
            rc = ss_error_set(SS_EINPUT,
                              "%s: cannot open (%s needs --data-dir DIR holding %s, %s, "
                              "%s; no Debian package provides it)",
                              path, name, files[0], files[1], files[2]);
            break;
        }
        tokenize(&v, (const char *)text, len, 1, k == 0, &s[k]);
        free(text);
        if (s[k].n < 2) rc = ss_error_set(SS_EINPUT, "%s: fewer than 2 tokens", path);
    }
    if (rc == SS_OK) {
        to_dataset(train, name, &s[0], v.n);
        to_dataset(test, name, &s[1], v.n);
    }
    for (int k = 0; k < 3; k++)
        free(s[k].t);
    vocab_free(&v);
    return rc;
}

static const char *const wiki_files[3] = {"wiki.train.tokens", "wiki.valid.tokens",
                                          "wiki.test.tokens"};
static const char *const ptb_files[3] = {"ptb.train.txt", "ptb.valid.txt", "ptb.test.txt"};

static int has_file(const char *dir, const char *name) {
    char path[PATH_BYTES];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int dataset_is_text_spec(const char *spec) {
    if (!strcmp(spec, "web-bible") || !strcmp(spec, "wikitext-2") ||
        !strcmp(spec, "wikitext-103") || !strcmp(spec, "ptb"))
        return 1;
    return has_file(spec, wiki_files[0]) || has_file(spec, ptb_files[0]) ||
           has_file(spec, "ot.bzz");
}

int dataset_text_load(const char *spec, const char *dir, dataset *train, dataset *test) {
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    if (!strcmp(spec, "web-bible")) return load_web(dir ? dir : WEB_DIR, train, test);
    if (!strcmp(spec, "wikitext-2") || !strcmp(spec, "wikitext-103") || !strcmp(spec, "ptb")) {
        const char *const *files = !strcmp(spec, "ptb") ? ptb_files : wiki_files;
        if (!dir)
            return ss_error_set(SS_EUSAGE,
                                "%s needs --data-dir DIR holding %s, %s and %s (no Debian "
                                "package provides it)",
                                spec, files[0], files[1], files[2]);
        return load_lines(spec, dir, files, train, test);
    }
    if (has_file(spec, "ot.bzz")) return load_web(spec, train, test);
    if (has_file(spec, ptb_files[0])) return load_lines("ptb", spec, ptb_files, train, test);
    return load_lines(strstr(spec, "103") ? "wikitext-103" : "wikitext-2", spec, wiki_files, train,
                      test);
}

int dataset_kind_fits(const char *set_name, int text, const model_spec *spec) {
    const int lm = spec->arch == MODEL_ARCH_GPT;
    if (lm && !text)
        return ss_error_set(SS_EUSAGE,
                            "model %s is a language model: it takes a text data set (web-bible, "
                            "wikitext-2, wikitext-103, ptb), not %s",
                            model_arch_name(spec->arch), set_name);
    if (!lm && text)
        return ss_error_set(SS_EUSAGE,
                            "data set %s is text: it takes a language model (gpt:wlm, "
                            "gpt:L,D,H,T); %s takes an image or feature set (fashion-mnist, mnist, "
                            "cifar10, synthetic)",
                            set_name, model_arch_name(spec->arch));
    return SS_OK;
}

int dataset_fit_model(dataset *train, dataset *test, const model_spec *spec) {
    int rc = dataset_kind_fits(train->name, train->tokens != NULL, spec);
    if (rc != SS_OK || spec->arch != MODEL_ARCH_GPT) return rc;
    if (train->w != spec->gpt_seq + 1) dataset_set_window(train, spec->gpt_seq);
    if (test->tokens && test->w != spec->gpt_seq + 1) dataset_set_window(test, spec->gpt_seq);
    if (train->n < 1 || test->n < 1)
        return ss_error_set(SS_EUSAGE, "data set %s: fewer than T + 1 = %d tokens in a split",
                            train->name, spec->gpt_seq + 1);
    return SS_OK;
}
