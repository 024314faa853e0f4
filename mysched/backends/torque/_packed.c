/* The walk of a C batch_status reply into packed rows, as mysched.backends.torque.ifl's
 * convert_packed does it in Python (see there for what a packed row is), for the daemon's read
 * of tens of thousands of jobs: in Python each attrl entry costs a few ctypes field reads, and
 * at 20,000 OpenPBS jobs (280,000 entries) the walk took as long as the server's reply itself
 * (docs/design/openpbs-read.md). Built at install time where a compiler is; convert_packed
 * falls back to its Python walk where it is not (the result is the same, byte for byte).
 *
 * The structs are IFL's, the same in TORQUE (pbs_ifl.h) and OpenPBS (pbs_ifl.h). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

struct attrl {
    struct attrl *next;
    char *name;
    char *resource;
    char *value;
    int op;
};

struct batch_status {
    struct batch_status *next;
    char *name;
    struct attrl *attribs;
    char *text;
};

/* Is `name` one of the bytes objects of the tuple `names`? (two or three short names) */
static int named(const char *name, PyObject *names)
{
    Py_ssize_t i, n = PyTuple_GET_SIZE(names);
    for (i = 0; i < n; i++) {
        PyObject *b = PyTuple_GET_ITEM(names, i);
        if (strcmp(name, PyBytes_AS_STRING(b)) == 0)
            return 1;
    }
    return 0;
}

/* A growing byte buffer (one row's packed attributes). */
struct buf {
    char *data;
    size_t len, cap;
};

static int put(struct buf *b, const char *s, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *p;
        while (cap < b->len + n)
            cap *= 2;
        p = PyMem_Realloc(b->data, cap);
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    return 0;
}

static PyObject *convert(PyObject *self, PyObject *args)
{
    unsigned long long address;
    PyObject *resourced, *skipped, *out = NULL;
    struct batch_status *bs;
    struct buf b = {NULL, 0, 0};

    if (!PyArg_ParseTuple(args, "KO!O!:convert", &address, &PyTuple_Type, &resourced, &PyTuple_Type, &skipped))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(resourced) + PyTuple_GET_SIZE(skipped); i++) {
        PyObject *o = i < PyTuple_GET_SIZE(resourced) ? PyTuple_GET_ITEM(resourced, i)
                                                       : PyTuple_GET_ITEM(skipped, i - PyTuple_GET_SIZE(resourced));
        if (!PyBytes_Check(o)) {
            PyErr_SetString(PyExc_TypeError, "convert: attribute names must be bytes");
            return NULL;
        }
    }
    out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (bs = (struct batch_status *)(uintptr_t)address; bs != NULL; bs = bs->next) {
        struct attrl *a;
        int first = 1;
        PyObject *name, *packed, *row;
        b.len = 0;
        for (a = bs->attribs; a != NULL; a = a->next) {
            const char *n = a->name ? a->name : "";
            const char *v = a->value ? a->value : "";
            int res = named(n, resourced);
            if (!res && named(n, skipped))
                continue;
            if (!first && put(&b, "\0", 1) < 0)
                goto fail;
            first = 0;
            if (put(&b, n, strlen(n)) < 0)
                goto fail;
            if (res) {
                const char *r = a->resource ? a->resource : "";
                if (put(&b, ".", 1) < 0 || put(&b, r, strlen(r)) < 0)
                    goto fail;
            }
            if (put(&b, "\0", 1) < 0 || put(&b, v, strlen(v)) < 0)
                goto fail;
        }
        name = PyBytes_FromString(bs->name ? bs->name : "");
        if (name == NULL)
            goto fail;
        packed = PyBytes_FromStringAndSize(b.data ? b.data : "", (Py_ssize_t)b.len);
        if (packed == NULL) {
            Py_DECREF(name);
            goto fail;
        }
        row = PyTuple_Pack(2, name, packed);
        Py_DECREF(name);
        Py_DECREF(packed);
        if (row == NULL || PyList_Append(out, row) < 0) {
            Py_XDECREF(row);
            goto fail;
        }
        Py_DECREF(row);
    }
    PyMem_Free(b.data);
    return out;
fail:
    PyMem_Free(b.data);
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"convert", convert, METH_VARARGS,
     "convert(address, resourced, skipped) -> [(name, packed)]: the batch_status list at `address` "
     "as convert_packed's rows (`resourced`, `skipped`: tuples of attribute names as bytes)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_packed",
                                    "convert_packed's walk of a batch_status reply, in C.", -1, methods};

PyMODINIT_FUNC PyInit__packed(void)
{
    return PyModule_Create(&module);
}
