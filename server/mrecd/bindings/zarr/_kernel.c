/*
 * mrecd.bindings.zarr._kernel: a commit's chunks through bytes -> numcodecs.shuffle -> zstd ->
 * crc32c in one call that never holds the GIL.
 *
 * Why native code: an automatic commit encodes ~200 chunks, and in Python each chunk costs a
 * few GIL round trips (the shuffle's copy, zstd's call, the checksum, the bytes). Under an
 * appending thread that is busy in Python each retake waits, and the encoder becomes the stage
 * the whole pipeline waits on (bench/PROFILE.md, "Tenth session"). Here the caller hands over
 * whole runs of chunks; two native threads each take every other chunk and shuffle it into a
 * buffer of their own, compress it with the system's libzstd and append its crc32c.
 *
 * The bytes are a valid chunk of that pipeline, so any Zarr V3 reader decodes them; they need
 * not equal python-zstandard's (the zstd versions differ), and nothing in the format asks that.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<zstd.h>)
#include <zstd.h>
#define HAVE_ZSTD_H 1
#endif
#endif
#ifndef HAVE_ZSTD_H
/* zstd's stable API (zstd.h, v1.0 on): declared here so the build needs only libzstd.so.1 */
typedef struct ZSTD_CCtx_s ZSTD_CCtx;
ZSTD_CCtx *ZSTD_createCCtx(void);
size_t ZSTD_freeCCtx(ZSTD_CCtx *cctx);
size_t ZSTD_compressCCtx(ZSTD_CCtx *cctx, void *dst, size_t dstCapacity, const void *src,
                         size_t srcSize, int compressionLevel);
size_t ZSTD_compressBound(size_t srcSize);
unsigned ZSTD_isError(size_t code);
const char *ZSTD_getErrorName(size_t code);
int ZSTD_minCLevel(void);
int ZSTD_maxCLevel(void);
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define HAVE_SSE42_PATH 1
#endif

#define MAX_THREADS 8

/* -- crc32c (Castagnoli, reflected 0x82F63B78), as google_crc32c.value computes it -------- */

static uint32_t crc_table[256];
static int crc_hardware;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        crc_table[i] = c;
    }
#ifdef HAVE_SSE42_PATH
    __builtin_cpu_init();
    crc_hardware = __builtin_cpu_supports("sse4.2");
#endif
}

#ifdef HAVE_SSE42_PATH
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(const uint8_t *p, size_t n) {
    uint64_t c = 0xFFFFFFFFu;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
    }
    uint32_t c32 = (uint32_t)c;
    for (; n; n--) c32 = _mm_crc32_u8(c32, *p++);
    return c32 ^ 0xFFFFFFFFu;
}
#endif

static uint32_t crc32c(const uint8_t *p, size_t n) {
#ifdef HAVE_SSE42_PATH
    if (crc_hardware) return crc_sse42(p, n);
#endif
    uint32_t c = 0xFFFFFFFFu;
    while (n--) c = crc_table[(c ^ *p++) & 0xFFu] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* -- numcodecs.shuffle: byte k of every element, for k in order ------------------------- */

static void shuffle(const uint8_t *in, uint8_t *out, size_t nbytes, size_t size) {
    size_t n = nbytes / size;
    if (size == 8) { /* the declared-precision f64 columns: unrolled */
        for (size_t i = 0; i < n; i++) {
            const uint8_t *e = in + 8 * i;
            out[i] = e[0];
            out[n + i] = e[1];
            out[2 * n + i] = e[2];
            out[3 * n + i] = e[3];
            out[4 * n + i] = e[4];
            out[5 * n + i] = e[5];
            out[6 * n + i] = e[6];
            out[7 * n + i] = e[7];
        }
        return;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < size; k++) out[k * n + i] = in[size * i + k];
}

/* -- zstd contexts, reused across calls and threads (each in use by one thread at a time) -- */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static ZSTD_CCtx *pool[2 * MAX_THREADS];
static int pooled;

static ZSTD_CCtx *context_take(void) {
    ZSTD_CCtx *cctx = NULL;
    pthread_mutex_lock(&pool_lock);
    if (pooled) cctx = pool[--pooled];
    pthread_mutex_unlock(&pool_lock);
    return cctx ? cctx : ZSTD_createCCtx();
}

static void context_give(ZSTD_CCtx *cctx) {
    pthread_mutex_lock(&pool_lock);
    if (pooled < 2 * MAX_THREADS) {
        pool[pooled++] = cctx;
        cctx = NULL;
    }
    pthread_mutex_unlock(&pool_lock);
    if (cctx) ZSTD_freeCCtx(cctx);
}

/* -- one call's work ---------------------------------------------------------------------- */

typedef struct {
    const uint8_t *src; /* the chunk's plain bytes */
    size_t nbytes, itemsize;
    uint8_t *dst; /* its slot of the output: compressed bytes, then 4 of crc32c */
    size_t capacity;
    size_t size; /* bytes written to dst */
} Job;

typedef struct {
    Job *jobs;
    size_t count, first, step; /* jobs first, first + step, ... */
    int level;
    size_t error; /* a zstd error code, or 0 */
    int no_memory;
} Worker;

static void *work(void *arg) {
    Worker *w = arg;
    size_t scratch_size = 0;
    uint8_t *scratch = NULL;
    ZSTD_CCtx *cctx = context_take();
    if (!cctx) {
        w->no_memory = 1;
        return NULL;
    }
    for (size_t j = w->first; j < w->count; j += w->step) {
        Job *job = &w->jobs[j];
        const uint8_t *plain = job->src;
        if (job->itemsize > 1) {
            if (scratch_size < job->nbytes) {
                free(scratch);
                scratch = malloc(job->nbytes ? job->nbytes : 1);
                scratch_size = scratch ? job->nbytes : 0;
                if (!scratch) {
                    w->no_memory = 1;
                    break;
                }
            }
            shuffle(job->src, scratch, job->nbytes, job->itemsize);
            plain = scratch;
        }
        size_t r = ZSTD_compressCCtx(cctx, job->dst, job->capacity - 4, plain, job->nbytes, w->level);
        if (ZSTD_isError(r)) {
            w->error = r;
            break;
        }
        uint32_t c = crc32c(job->dst, r);
        uint8_t le[4] = {(uint8_t)c, (uint8_t)(c >> 8), (uint8_t)(c >> 16), (uint8_t)(c >> 24)};
        memcpy(job->dst + r, le, 4);
        job->size = r + 4;
    }
    free(scratch);
    context_give(cctx);
    return NULL;
}

/* Run the jobs on `threads` threads (the caller's among them); 0 on success. */
static int run_all(Job *jobs, size_t count, int level, int threads, size_t *error) {
    Worker workers[MAX_THREADS];
    pthread_t ids[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    if ((size_t)threads > count) threads = count ? (int)count : 1;
    for (int t = 0; t < threads; t++) {
        workers[t] = (Worker){jobs, count, (size_t)t, (size_t)threads, level, 0, 0};
    }
    for (int t = 1; t < threads; t++) started[t] = pthread_create(&ids[t], NULL, work, &workers[t]) == 0;
    work(&workers[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t]) {
            pthread_join(ids[t], NULL);
        } else {
            work(&workers[t]); /* no thread to be had: do its share here */
        }
    }
    *error = 0;
    int no_memory = 0;
    for (int t = 0; t < threads; t++) {
        if (workers[t].error) *error = workers[t].error;
        no_memory |= workers[t].no_memory;
    }
    return no_memory ? -1 : (*error ? -2 : 0);
}

/* -- Python: encode(runs, level, threads) ------------------------------------------------ */

typedef struct {
    Py_buffer view;
    Py_ssize_t offset, count, nbytes, itemsize;
} Run;

static int parse_run(PyObject *item, Run *run) {
    PyObject *source;
    if (!PyArg_ParseTuple(item, "Onnnn;a run is (buffer, offset, count, nbytes, itemsize)",
                          &source, &run->offset, &run->count, &run->nbytes, &run->itemsize))
        return -1;
    if (run->offset < 0 || run->count < 0 || run->nbytes < 0) {
        PyErr_SetString(PyExc_ValueError, "offset, count and nbytes must not be negative");
        return -1;
    }
    if (run->itemsize < 1 || run->nbytes % run->itemsize) {
        PyErr_SetString(PyExc_ValueError, "nbytes must be a whole number of itemsize-byte elements");
        return -1;
    }
    if (PyObject_GetBuffer(source, &run->view, PyBUF_SIMPLE) < 0) return -1;
    if (run->count && (run->nbytes > (PY_SSIZE_T_MAX - run->offset) / run->count ||
                       run->offset + run->count * run->nbytes > run->view.len)) {
        PyBuffer_Release(&run->view);
        PyErr_SetString(PyExc_ValueError, "the chunks run past the end of their buffer");
        return -1;
    }
    return 0;
}

static PyObject *chunk_lists(Run *runs, Py_ssize_t nruns, Job *jobs) {
    PyObject *out = PyList_New(nruns);
    if (!out) return NULL;
    size_t j = 0;
    for (Py_ssize_t a = 0; a < nruns; a++) {
        PyObject *chunks = PyList_New(runs[a].count);
        if (!chunks) goto fail;
        PyList_SET_ITEM(out, a, chunks);
        for (Py_ssize_t k = 0; k < runs[a].count; k++, j++) {
            PyObject *data = PyBytes_FromStringAndSize((const char *)jobs[j].dst, jobs[j].size);
            if (!data) goto fail;
            PyList_SET_ITEM(chunks, k, data);
        }
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyObject *encode(PyObject *module, PyObject *args) {
    PyObject *items;
    int level, threads;
    if (!PyArg_ParseTuple(args, "Oii:encode", &items, &level, &threads)) return NULL;
    if (threads < 1 || threads > MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "threads must be within 1..%d", MAX_THREADS);
        return NULL;
    }
    if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel()) {
        PyErr_Format(PyExc_ValueError, "zstd level %d is outside %d..%d", level, ZSTD_minCLevel(),
                     ZSTD_maxCLevel());
        return NULL;
    }
    PyObject *seq = PySequence_Fast(items, "runs must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t nruns = PySequence_Fast_GET_SIZE(seq);
    Run *runs = PyMem_Calloc(nruns ? nruns : 1, sizeof(Run));
    Py_ssize_t parsed = 0;
    Job *jobs = NULL;
    uint8_t *slots = NULL;
    PyObject *result = NULL;
    if (!runs) {
        PyErr_NoMemory();
        goto done;
    }
    size_t count = 0, capacity = 0;
    for (; parsed < nruns; parsed++) {
        if (parse_run(PySequence_Fast_GET_ITEM(seq, parsed), &runs[parsed]) < 0) goto done;
        count += runs[parsed].count;
        capacity += runs[parsed].count * (ZSTD_compressBound(runs[parsed].nbytes) + 4);
    }
    jobs = PyMem_Calloc(count ? count : 1, sizeof(Job));
    slots = PyMem_Malloc(capacity ? capacity : 1);
    if (!jobs || !slots) {
        PyErr_NoMemory();
        goto done;
    }
    size_t j = 0, at = 0;
    for (Py_ssize_t a = 0; a < nruns; a++) {
        size_t slot = ZSTD_compressBound(runs[a].nbytes) + 4;
        const uint8_t *base = (const uint8_t *)runs[a].view.buf + runs[a].offset;
        for (Py_ssize_t k = 0; k < runs[a].count; k++, j++, at += slot) {
            jobs[j] = (Job){base + k * runs[a].nbytes, (size_t)runs[a].nbytes,
                            (size_t)runs[a].itemsize, slots + at, slot, 0};
        }
    }
    size_t error = 0;
    int status = 0;
    if (count) {
        Py_BEGIN_ALLOW_THREADS;
        status = run_all(jobs, count, level, threads, &error);
        Py_END_ALLOW_THREADS;
    }
    if (status == -1) {
        PyErr_NoMemory();
    } else if (status == -2) {
        PyErr_Format(PyExc_RuntimeError, "zstd: %s", ZSTD_getErrorName(error));
    } else {
        result = chunk_lists(runs, nruns, jobs);
    }
done:
    for (Py_ssize_t a = 0; a < parsed; a++) PyBuffer_Release(&runs[a].view);
    PyMem_Free(runs);
    PyMem_Free(jobs);
    PyMem_Free(slots);
    Py_DECREF(seq);
    return result;
}

static PyObject *crc(PyObject *module, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    uint32_t c = crc32c(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

PyDoc_STRVAR(encode_doc,
             "encode(runs, level, threads) -> list[list[bytes]]\n\n"
             "Each run is (buffer, offset, count, nbytes, itemsize): count chunks of nbytes\n"
             "lying back to back in buffer from byte offset. Returns, per run, each chunk's\n"
             "bytes through shuffle(itemsize) -> zstd(level) -> crc32c, computed on `threads`\n"
             "native threads without the GIL.");
PyDoc_STRVAR(crc_doc, "crc(data) -> int: the crc32c of a bytes-like object (tests check it).");

static PyMethodDef methods[] = {
    {"encode", encode, METH_VARARGS, encode_doc},
    {"crc", crc, METH_O, crc_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_kernel",
    "A commit's chunks through shuffle, zstd and crc32c in one GIL-free call.", -1, methods,
};

PyMODINIT_FUNC PyInit__kernel(void) {
    crc_init();
    return PyModule_Create(&module_def);
}
