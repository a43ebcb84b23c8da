// SPDX-License-Identifier: MIT
/* The Python package's hot C call without ctypes: a collective's symaddr_collective_run_at.
 * ctypes converts its eleven arguments through libffi at 2-3 us a call, which is most of what
 * Python adds to a small collective; this module converts them with the C API (0.1 us). It does
 * not link libsymaddr: bind() takes the address of the function the package's ctypes library
 * already loaded, so one library serves both. The GIL is released around the call, as ctypes
 * does: a collective waits for its peers, and other threads run meanwhile. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef int (*run_at_fn)(void *ctx, int index, const void *send, void *recv, size_t count,
                         int dtype, int op, int root, void *stream, const char *file, int line);

static const char capsule_name[] = "symaddr._fast.run_at";

/* What ctypes' c_void_p takes here: None is NULL; an int of -2^63 .. 2^64 - 1 (a negative one
 * wraps, as in ctypes); a ctypes.c_void_p (the package's context handle), by its value; else
 * TypeError. */
static int pointer_of(PyObject *o, void **p)
{
    if (o == Py_None) {
        *p = NULL;
        return 0;
    }
    if (PyLong_Check(o)) {
        *p = PyLong_AsVoidPtr(o);
        return *p == NULL && PyErr_Occurred() ? -1 : 0;
    }
    PyObject *v =
        strcmp(Py_TYPE(o)->tp_name, "c_void_p") == 0 ? PyObject_GetAttrString(o, "value") : NULL;
    if (v && (v == Py_None || PyLong_Check(v))) {
        int r = pointer_of(v, p);
        Py_DECREF(v);
        return r;
    }
    Py_XDECREF(v);
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "expected an int, a ctypes.c_void_p or None for a pointer, not %.100s",
                 Py_TYPE(o)->tp_name);
    return -1;
}

static int int_of(PyObject *o, int *v)
{
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "expected an int, not %.100s", Py_TYPE(o)->tp_name);
        return -1;
    }
    long l = PyLong_AsLong(o);
    if (l == -1 && PyErr_Occurred())
        return -1;
    if (l < INT32_MIN || l > INT32_MAX) {
        PyErr_Format(PyExc_OverflowError, "%ld does not fit a C int", l);
        return -1;
    }
    *v = (int)l;
    return 0;
}

/* run_at(ctx, index, send, recv, count, dtype, op, root, stream, file, line) -> status: the
 * arguments of symaddr_collective_run_at, as the package's ctypes prototype takes them. */
static PyObject *run_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11) {
        PyErr_Format(PyExc_TypeError, "run_at takes 11 arguments (%zd given)", nargs);
        return NULL;
    }
    run_at_fn fn = (run_at_fn)(uintptr_t)PyCapsule_GetPointer(self, capsule_name);
    void *ctx, *send, *recv, *stream;
    int index, dtype, op, root, line;
    if (!fn || pointer_of(args[0], &ctx) || int_of(args[1], &index) || pointer_of(args[2], &send) ||
        pointer_of(args[3], &recv))
        return NULL;
    if (!PyLong_Check(args[4])) {
        PyErr_Format(PyExc_TypeError, "expected an int for count, not %.100s",
                     Py_TYPE(args[4])->tp_name);
        return NULL;
    }
    size_t count = PyLong_AsSize_t(args[4]);
    if (count == (size_t)-1 && PyErr_Occurred())
        return NULL;
    if (int_of(args[5], &dtype) || int_of(args[6], &op) || int_of(args[7], &root) ||
        pointer_of(args[8], &stream) || int_of(args[10], &line))
        return NULL;
    const char *file = NULL;
    if (args[9] != Py_None) {
        if (!PyBytes_Check(args[9])) {
            PyErr_Format(PyExc_TypeError, "expected bytes or None for file, not %.100s",
                         Py_TYPE(args[9])->tp_name);
            return NULL;
        }
        file = PyBytes_AS_STRING(args[9]);
    }
    PyThreadState *saved = PyEval_SaveThread(); /* Py_BEGIN_ALLOW_THREADS */
    int status = fn(ctx, index, send, recv, count, dtype, op, root, stream, file, line);
    PyEval_RestoreThread(saved);
    return PyLong_FromLong(status);
}

static PyMethodDef run_at_def = {
    "symaddr_collective_run_at", (PyCFunction)(void (*)(void))run_at, METH_FASTCALL,
    "symaddr_collective_run_at(ctx, index, send, recv, count, dtype, op, root, stream, file, "
    "line) -> status, without ctypes"};

/* bind(address) -> the callable run_at over the function at address (an int, as
 * ctypes.cast(f, c_void_p).value gives it). */
static PyObject *bind(PyObject *module, PyObject *address)
{
    (void)module;
    void *fn;
    if (pointer_of(address, &fn))
        return NULL;
    if (!fn) {
        PyErr_SetString(PyExc_ValueError, "bind takes the function's address, not NULL");
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(fn, capsule_name, NULL);
    if (!capsule)
        return NULL;
    PyObject *f = PyCFunction_NewEx(&run_at_def, capsule, NULL);
    Py_DECREF(capsule);
    return f;
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_O,
     "bind(address) -> symaddr_collective_run_at at address, called without ctypes"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT,
                                    "symaddr._fast",
                                    "The package's hot C call without ctypes.",
                                    -1,
                                    methods,
                                    NULL,
                                    NULL,
                                    NULL,
                                    NULL};

PyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&module); }
