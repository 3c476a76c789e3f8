/* srcgrad.jit._centry: grad's common jit call in C (docs/performance.md, "jit, round 10").
 *
 * An Entry is the class call (``__call__``) of a JitGradFunction whose hot call was
 * recorded (srcgrad/jit/hot.py's "call" form). It does what that generated Python
 * function does for the one case it takes, and nothing else: the arguments of exactly
 * the types Numba compiled for (hot.exact_checks), the compile's guard and frozen
 * numbers holding, the output buffer allocated as hot.py allocates it, Numba's entry
 * point called, the buffer returned where the compiled code wrote the gradient into it.
 * Any other call (another count of arguments, keywords, another type, a guard that does
 * not hold) runs the Python form unchanged, with the same arguments: what this takes it
 * computes exactly as the Python form would, the rest the Python form computes itself.
 *
 * An ndarray is read through the first fields of NumPy's PyArrayObject_fields (part of
 * NumPy's ABI since 1.7, the same in NumPy 2), declared here: hot.py checks this mirror
 * against ndarray.ndim/shape/dtype/flags before using the module. The buffer of a
 * one-dimensional array is made with NumPy's C API (PyArray_SimpleNew) where setup.py
 * found NumPy's headers (SG_NUMPY_API; 0.07 us less a call than numpy.empty), else, and
 * for other shapes, by calling numpy.empty.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#ifdef Py_GIL_DISABLED
#error "the C entry reads dicts and cells with borrowed references: not built without the GIL"
#endif
#ifdef SG_NUMPY_API
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NPY_TARGET_VERSION NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>
#endif

typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dimensions;   /* npy_intp: an intptr_t, the size of Py_ssize_t */
    Py_ssize_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
} ArrayMirror;

/* guard operations (hot.py's _c_guard writes them) */
enum {
    OP_FUNC,         /* a, b, c, d: fn.__code__ is b and fn.__defaults__ is c and fn.__kwdefaults__ is d */
    OP_LIST_EQ,      /* a[index] == b  (a: a list) */
    OP_DICT_IS,      /* a[b] is c  (a: a dict; a missing key does not hold) */
    OP_DICT_GET_IS,  /* a.get(b, MISSING) is c */
    OP_NOT_IN,       /* b not in a */
    OP_CELL_IS,      /* a.cell_contents is b  (an empty cell does not hold) */
    OP_CELL_MISSING, /* a is empty or holds b (MISSING) */
    OP_DICT_NUM,     /* type(a[b]) is type(c) and a[b] == c */
    OP_CELL_NUM,     /* type(a.cell_contents) is type(b) and a.cell_contents == b */
    OP_PY,           /* a(): a Python condition (True or False; it catches what it raises) */
    OP_COUNT
};

typedef struct {
    int op;
    Py_ssize_t index;
    PyObject *a, *b, *c, *d;   /* borrowed from the Entry's spec */
} GuardOp;

enum { ARG_ARRAY, ARG_FLOAT, ARG_BOOL };

typedef struct {
    int kind;
    int ndim;
    PyObject *descr;   /* borrowed */
    int mask, want;
} ArgSpec;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *spec;     /* the tuple it was made from: holds every borrowed reference */
    PyObject *python;   /* the Python form: python(self, *args, **kwargs) */
    PyObject *rerun;    /* rerun(self, args): the general path after the compiled code raised */
    PyObject *after;    /* after(args, result, buf): the Python form's end for a result */
    PyObject *entry_point;
    PyObject *empty;    /* numpy.empty */
    PyObject *ndarray;  /* numpy.ndarray */
    PyObject *f64;      /* numpy.dtype(float64) */
    PyObject *no_buffer;   /* (0,) * rank: the shape of a buffer not written into */
    PyObject *entry;    /* dispatch._Entry (what _unhot compares) */
    PyObject *source;   /* the Python form's source */
    Py_ssize_t nargs, position, small;
    Py_ssize_t nops;
    GuardOp *ops;
    ArgSpec *args;
    unsigned long long taken;   /* calls whose compiled code this ran */
    PyObject *weakrefs;
} Entry;

static PyTypeObject EntryType;
static PyObject *grad_outputs_name;   /* "grad_outputs", interned */

/* An error while checking the guard: an Exception does not hold (0, cleared), anything
   else (KeyboardInterrupt) propagates (-1), as the Python form's `except Exception`. */
static int
failed(void)
{
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

static int
typed_equal(PyObject *v, PyObject *want)
{
    if (Py_TYPE(v) != Py_TYPE(want))
        return 0;
    int r = PyObject_RichCompareBool(v, want, Py_EQ);
    return r < 0 ? failed() : r;
}

/* 1: the guard holds, 0: it does not, -1: an error to propagate */
static int
guard_holds(Entry *e)
{
    for (Py_ssize_t k = 0; k < e->nops; k++) {
        GuardOp *g = &e->ops[k];
        PyObject *v;
        int r;
        switch (g->op) {
        case OP_FUNC: {
            PyFunctionObject *f = (PyFunctionObject *)g->a;
            PyObject *defaults = f->func_defaults ? f->func_defaults : Py_None;
            PyObject *kwdefaults = f->func_kwdefaults ? f->func_kwdefaults : Py_None;
            if (f->func_code != g->b || defaults != g->c || kwdefaults != g->d)
                return 0;
            break;
        }
        case OP_LIST_EQ:
            if (g->index >= PyList_GET_SIZE(g->a))
                return 0;
            v = PyList_GET_ITEM(g->a, g->index);
            if (v != g->b) {
                Py_INCREF(v);
                r = PyObject_RichCompareBool(v, g->b, Py_EQ);
                Py_DECREF(v);
                if (r <= 0)
                    return r < 0 ? failed() : 0;
            }
            break;
        case OP_DICT_IS:
        case OP_DICT_GET_IS:
        case OP_DICT_NUM:
            v = PyDict_GetItemWithError(g->a, g->b);
            if (v == NULL) {
                if (PyErr_Occurred())
                    return failed();
                if (g->op != OP_DICT_GET_IS)
                    return 0;
                v = g->d;   /* MISSING */
            }
            if (g->op == OP_DICT_NUM) {
                Py_INCREF(v);
                r = typed_equal(v, g->c);
                Py_DECREF(v);
                if (r <= 0)
                    return r;
            }
            else if (v != g->c)
                return 0;
            break;
        case OP_NOT_IN:
            r = PyDict_Contains(g->a, g->b);
            if (r != 0)
                return r < 0 ? failed() : 0;
            break;
        case OP_CELL_IS:
            v = PyCell_GET(g->a);
            if (v == NULL || v != g->b)
                return 0;
            break;
        case OP_CELL_MISSING:
            v = PyCell_GET(g->a);
            if (v != NULL && v != g->b)
                return 0;
            break;
        case OP_CELL_NUM:
            v = PyCell_GET(g->a);
            if (v == NULL)
                return 0;
            Py_INCREF(v);
            r = typed_equal(v, g->b);
            Py_DECREF(v);
            if (r <= 0)
                return r;
            break;
        case OP_PY:
            v = PyObject_CallNoArgs(g->a);
            if (v == NULL)
                return -1;
            r = PyObject_IsTrue(v);
            Py_DECREF(v);
            if (r <= 0)
                return r < 0 ? failed() : 0;
            break;
        default:
            return 0;
        }
    }
    return 1;
}

static PyObject *
tuple_of(PyObject *const *items, Py_ssize_t n)
{
    PyObject *t = PyTuple_New(n);
    if (t != NULL)
        for (Py_ssize_t k = 0; k < n; k++) {
            Py_INCREF(items[k]);
            PyTuple_SET_ITEM(t, k, items[k]);
        }
    return t;
}

static PyObject *
python_form(Entry *e, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return PyObject_Vectorcall(e->python, args, nargsf, kwnames);
}

static PyObject *
entry_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Entry *e = (Entry *)op;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (e->python == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "srcgrad jit Entry: cleared");
        return NULL;
    }
    if (n != e->nargs + 1)
        return python_form(e, args, nargsf, kwnames);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) {
        /* only grad_outputs=None, the Python form's default */
        if (PyTuple_GET_SIZE(kwnames) != 1 || args[n] != Py_None)
            return python_form(e, args, nargsf, kwnames);
        PyObject *name = PyTuple_GET_ITEM(kwnames, 0);
        if (name != grad_outputs_name &&
                !(PyUnicode_Check(name) && PyUnicode_Compare(name, grad_outputs_name) == 0)) {
            if (PyErr_Occurred())
                return NULL;
            return python_form(e, args, nargsf, kwnames);
        }
    }
    PyObject *const *a = args + 1;   /* args[0]: the JitGradFunction */
    for (Py_ssize_t k = 0; k < e->nargs; k++) {
        ArgSpec *s = &e->args[k];
        PyObject *v = a[k];
        if (s->kind == ARG_ARRAY) {
            ArrayMirror *m = (ArrayMirror *)v;
            if ((PyObject *)Py_TYPE(v) != e->ndarray || m->nd != s->ndim ||
                    m->descr != s->descr || (m->flags & s->mask) != s->want)
                return python_form(e, args, nargsf, kwnames);
        }
        else if (s->kind == ARG_FLOAT) {
            if (!PyFloat_CheckExact(v))
                return python_form(e, args, nargsf, kwnames);
        }
        else if (!PyBool_Check(v))
            return python_form(e, args, nargsf, kwnames);
    }
    int holds = guard_holds(e);
    if (holds < 0)
        return NULL;
    if (!holds)
        return python_form(e, args, nargsf, kwnames);

    /* the buffer, as hot.py: the shape of a small float64 array `like`, else no_buffer */
    PyObject *buf, *shape = NULL;
    PyObject *like = a[e->position];
    if (e->args[e->position].kind == ARG_ARRAY) {
        ArrayMirror *m = (ArrayMirror *)like;
        if (m->descr == e->f64) {
            Py_ssize_t size = 1;
            for (int d = 0; d < m->nd; d++)
                size *= m->dimensions[d];
            if (size <= e->small) {
                if (m->nd == 1)
                    shape = PyLong_FromSsize_t(m->dimensions[0]);
                else {
                    shape = PyTuple_New(m->nd);
                    if (shape != NULL)
                        for (int d = 0; d < m->nd; d++) {
                            PyObject *dim = PyLong_FromSsize_t(m->dimensions[d]);
                            if (dim == NULL) {
                                Py_CLEAR(shape);
                                break;
                            }
                            PyTuple_SET_ITEM(shape, d, dim);
                        }
                }
                if (shape == NULL)
                    return NULL;
            }
        }
    }
#ifdef SG_NUMPY_API
    if (shape != NULL && ((ArrayMirror *)like)->nd == 1) {   /* numpy.empty(n), in C */
        Py_DECREF(shape);
        buf = PyArray_SimpleNew(1, ((ArrayMirror *)like)->dimensions, NPY_DOUBLE);
    }
    else
#endif
    if (shape != NULL) {
        buf = PyObject_Vectorcall(e->empty, &shape, 1, NULL);
        Py_DECREF(shape);
    }
    else
        buf = PyObject_Vectorcall(e->empty, &e->no_buffer, 1, NULL);
    if (buf == NULL)
        return NULL;

    PyObject *small_stack[9];
    PyObject **stack = small_stack;
    if (e->nargs + 1 > 9) {
        stack = PyMem_Malloc((e->nargs + 1) * sizeof(PyObject *));
        if (stack == NULL) {
            Py_DECREF(buf);
            return PyErr_NoMemory();
        }
    }
    for (Py_ssize_t k = 0; k < e->nargs; k++)
        stack[k] = a[k];
    stack[e->nargs] = buf;
    PyObject *result = PyObject_Vectorcall(e->entry_point, stack, e->nargs + 1, NULL);
    if (stack != small_stack)
        PyMem_Free(stack);
    e->taken++;
    if (result == NULL) {
        Py_DECREF(buf);
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return NULL;
        PyErr_Clear();   /* the general path runs it again (and raises, warns) */
        PyObject *given = tuple_of(a, e->nargs);
        if (given == NULL)
            return NULL;
        PyObject *call[2] = {args[0], given};
        PyObject *value = PyObject_Vectorcall(e->rerun, call, 2, NULL);
        Py_DECREF(given);
        return value;
    }
    if (PyTuple_CheckExact(result) && PyTuple_GET_SIZE(result) > 0 &&
            PyTuple_GET_ITEM(result, 0) == Py_None) {
        Py_DECREF(result);
        return buf;
    }
    PyObject *given = tuple_of(a, e->nargs);
    PyObject *value = NULL;
    if (given != NULL) {
        PyObject *call[3] = {given, result, buf};
        value = PyObject_Vectorcall(e->after, call, 3, NULL);
        Py_DECREF(given);
    }
    Py_DECREF(result);
    Py_DECREF(buf);
    return value;
}

static int
parse_spec(Entry *e, PyObject *spec)
{
    PyObject *argspecs, *ops;
    if (!PyArg_ParseTuple(spec, "OOOOOOOnnnO!O!O:Entry", &e->python, &e->rerun, &e->after,
                          &e->entry_point, &e->empty, &e->ndarray, &e->f64, &e->nargs,
                          &e->position, &e->small, &PyTuple_Type, &argspecs, &PyTuple_Type,
                          &ops, &e->no_buffer))
        return -1;
    if (PyTuple_GET_SIZE(argspecs) != e->nargs || e->position < 0 ||
            e->position >= e->nargs || !PyType_Check(e->ndarray)) {
        PyErr_SetString(PyExc_ValueError, "Entry: inconsistent arguments");
        return -1;
    }
    e->args = PyMem_Calloc(e->nargs ? e->nargs : 1, sizeof(ArgSpec));
    e->ops = PyMem_Calloc(PyTuple_GET_SIZE(ops) + 1, sizeof(GuardOp));
    if (e->args == NULL || e->ops == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < e->nargs; k++) {
        ArgSpec *s = &e->args[k];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(argspecs, k), "iiOii:argument", &s->kind,
                              &s->ndim, &s->descr, &s->mask, &s->want))
            return -1;
        if (s->kind < ARG_ARRAY || s->kind > ARG_BOOL) {
            PyErr_SetString(PyExc_ValueError, "Entry: an unknown argument kind");
            return -1;
        }
    }
    e->nops = PyTuple_GET_SIZE(ops);
    for (Py_ssize_t k = 0; k < e->nops; k++) {
        GuardOp *g = &e->ops[k];
        g->a = g->b = g->c = g->d = Py_None;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(ops, k), "in|OOOO:guard", &g->op, &g->index,
                              &g->a, &g->b, &g->c, &g->d))
            return -1;
        int ok;
        switch (g->op) {
        case OP_FUNC: ok = PyFunction_Check(g->a) && Py_IS_TYPE(g->a, &PyFunction_Type); break;
        case OP_LIST_EQ: ok = PyList_CheckExact(g->a) && g->index >= 0; break;
        case OP_DICT_IS: case OP_DICT_GET_IS: case OP_DICT_NUM: case OP_NOT_IN:
            ok = PyDict_CheckExact(g->a) && PyUnicode_CheckExact(g->b); break;
        case OP_CELL_IS: case OP_CELL_MISSING: case OP_CELL_NUM: ok = PyCell_Check(g->a); break;
        case OP_PY: ok = PyCallable_Check(g->a); break;
        default: ok = 0;
        }
        if (!ok) {
            PyErr_Format(PyExc_ValueError, "Entry: guard operation %zd is malformed", k);
            return -1;
        }
    }
    Py_INCREF(spec);
    e->spec = spec;
    return 0;
}

static PyObject *
entry_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *spec;
    if (!PyArg_ParseTuple(args, "O!:Entry", &PyTuple_Type, &spec))
        return NULL;
    Entry *e = PyObject_GC_New(Entry, type);
    if (e == NULL)
        return NULL;
    e->vectorcall = entry_vectorcall;
    e->spec = e->python = e->rerun = e->after = e->entry_point = e->empty = NULL;
    e->ndarray = e->f64 = e->no_buffer = NULL;
    e->entry = Py_None;
    Py_INCREF(Py_None);
    e->source = Py_None;
    Py_INCREF(Py_None);
    e->nargs = e->position = e->small = e->nops = 0;
    e->ops = NULL;
    e->args = NULL;
    e->taken = 0;
    e->weakrefs = NULL;
    if (parse_spec(e, spec) < 0) {
        /* the borrowed pointers parse_spec filled are not owned: forget them */
        e->python = e->rerun = e->after = e->entry_point = e->empty = NULL;
        e->ndarray = e->f64 = e->no_buffer = NULL;
        PyMem_Free(e->ops);
        PyMem_Free(e->args);
        e->ops = NULL;
        e->args = NULL;
        e->nops = 0;
        Py_DECREF(e->entry);
        Py_DECREF(e->source);
        PyObject_GC_Del(e);
        return NULL;
    }
    PyObject_GC_Track(e);
    return (PyObject *)e;
}

/* The pointers read from ``spec`` are borrowed: ``spec`` holds them. */
static int
entry_traverse(Entry *e, visitproc visit, void *arg)
{
    Py_VISIT(e->spec);
    Py_VISIT(e->entry);
    Py_VISIT(e->source);
    return 0;
}

static int
entry_clear(Entry *e)
{
    e->nops = 0;
    PyMem_Free(e->ops);
    e->ops = NULL;   /* a call after this raises (python is NULL) */
    e->python = e->rerun = e->after = e->entry_point = e->empty = NULL;
    e->ndarray = e->f64 = e->no_buffer = NULL;
    Py_CLEAR(e->spec);
    Py_CLEAR(e->entry);
    Py_CLEAR(e->source);
    return 0;
}

static void
entry_dealloc(Entry *e)
{
    PyObject_GC_UnTrack(e);
    if (e->weakrefs != NULL)
        PyObject_ClearWeakRefs((PyObject *)e);
    entry_clear(e);
    PyMem_Free(e->args);
    PyObject_GC_Del(e);
}

static PyObject *
entry_call(PyObject *op, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call(op, args, kwargs);
}

/* A method: ``g.__call__`` is bound, ``type(g).__call__`` is the Entry itself. */
static PyObject *
entry_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyMemberDef entry_members[] = {
    {"entry", T_OBJECT, offsetof(Entry, entry), 0, "the dispatch._Entry it runs"},
    {"__source__", T_OBJECT, offsetof(Entry, source), 0, "the Python form's source"},
    {"python", T_OBJECT, offsetof(Entry, python), READONLY,
     "the Python form (hot.py's call form): every call this does not take"},
    {"spec", T_OBJECT, offsetof(Entry, spec), READONLY,
     "(python, rerun, after, entry_point, empty, ndarray, float64, nargs, position, small, "
     "arguments, guard operations, no_buffer): what it was made from"},
    {"taken", T_ULONGLONG, offsetof(Entry, taken), READONLY,
     "the calls whose compiled code this ran"},
    {NULL}
};

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "srcgrad.jit._centry.Entry",
    .tp_doc = "grad's common jit call in C (hot.py's call form for the arguments and "
              "guard it checks); Entry(spec)",
    .tp_basicsize = sizeof(Entry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = entry_new,
    .tp_dealloc = (destructor)entry_dealloc,
    .tp_traverse = (traverseproc)entry_traverse,
    .tp_clear = (inquiry)entry_clear,
    .tp_vectorcall_offset = offsetof(Entry, vectorcall),
    .tp_weaklistoffset = offsetof(Entry, weakrefs),
    .tp_call = entry_call,
    .tp_descr_get = entry_descr_get,
    .tp_members = entry_members,
};

/* The class call of an instance whose class has an Entry as its ``__call__``: what
   CPython's generic slot (slot_tp_call, saved by ``install``) does, without its packing of
   the arguments again for a method: the Entry's own vectorcall with the instance first.
   A class whose ``__call__`` is set again gets the generic slot back from CPython. */
static ternaryfunc generic_call;
static PyObject *call_name;   /* "__call__", interned */

static PyObject *
instance_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *dict = Py_TYPE(self)->tp_dict;
    PyObject *call = dict ? PyDict_GetItemWithError(dict, call_name) : NULL;
    if (call != NULL && Py_IS_TYPE(call, &EntryType) && PyTuple_GET_SIZE(args) < 8 &&
            (kwargs == NULL || PyDict_GET_SIZE(kwargs) == 0 ||
             (PyDict_GET_SIZE(kwargs) == 1 &&
              PyDict_GetItemWithError(kwargs, grad_outputs_name) == Py_None))) {
        PyObject *stack[9];
        Py_ssize_t n = PyTuple_GET_SIZE(args);
        stack[0] = self;
        for (Py_ssize_t k = 0; k < n; k++)
            stack[k + 1] = PyTuple_GET_ITEM(args, k);
        Py_INCREF(call);
        PyObject *value = entry_vectorcall(call, stack, n + 1, NULL);
        Py_DECREF(call);
        return value;
    }
    if (PyErr_Occurred())
        return NULL;
    return generic_call(self, args, kwargs);
}

/* install(cls): ``cls``'s instances called through instance_call; cls's ``__call__`` must
   be an Entry just set (CPython's generic slot in place). True where installed. */
static PyObject *
install(PyObject *module, PyObject *cls)
{
    if (!PyType_Check(cls) || !PyType_HasFeature((PyTypeObject *)cls, Py_TPFLAGS_HEAPTYPE)) {
        PyErr_SetString(PyExc_TypeError, "install: a class made in Python");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    PyObject *call = PyDict_GetItemWithError(type->tp_dict, call_name);
    if (call == NULL || !Py_IS_TYPE(call, &EntryType) || type->tp_call == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_FALSE;
    }
    if (type->tp_call == instance_call)
        Py_RETURN_TRUE;
    if (generic_call == NULL)
        generic_call = type->tp_call;
    else if (type->tp_call != generic_call)
        Py_RETURN_FALSE;
    type->tp_call = instance_call;
    Py_RETURN_TRUE;
}

/* probe(array): (nd, shape, descr, flags) as the mirror reads them (hot.py compares
   them with the array's attributes before using this module) */
static PyObject *
probe(PyObject *module, PyObject *v)
{
    ArrayMirror *m = (ArrayMirror *)v;
    PyObject *shape = PyTuple_New(m->nd);
    if (shape == NULL)
        return NULL;
    for (int d = 0; d < m->nd; d++) {
        PyObject *dim = PyLong_FromSsize_t(m->dimensions[d]);
        if (dim == NULL) {
            Py_DECREF(shape);
            return NULL;
        }
        PyTuple_SET_ITEM(shape, d, dim);
    }
    return Py_BuildValue("iNOi", m->nd, shape, m->descr, m->flags);
}

static PyObject *
numpy_api(PyObject *module, PyObject *unused)
{
#ifdef SG_NUMPY_API
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef module_methods[] = {
    {"numpy_api", numpy_api, METH_NOARGS, "whether it was built with NumPy's headers"},
    {"install", install, METH_O, "install(cls): instances of cls (whose __call__ is an Entry) "
     "called without CPython's generic method call; True where installed"},
    {"probe", probe, METH_O, "probe(ndarray): (nd, shape, dtype, flags) read through the "
     "mirror of NumPy's array struct (only for an exact numpy.ndarray)"},
    {NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "srcgrad.jit._centry",
    "grad's common jit call in C (srcgrad/jit/hot.py; optional: built where a C compiler "
    "and Python's headers are found)", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__centry(void)
{
#ifdef SG_NUMPY_API
    import_array();   /* an ImportError where this NumPy's ABI is not the one built for */
#endif
    if (PyType_Ready(&EntryType) < 0)
        return NULL;
    if (call_name == NULL) {
        call_name = PyUnicode_InternFromString("__call__");
        if (call_name == NULL)
            return NULL;
    }
    if (grad_outputs_name == NULL) {
        grad_outputs_name = PyUnicode_InternFromString("grad_outputs");
        if (grad_outputs_name == NULL)
            return NULL;
    }
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&EntryType);
    if (PyModule_AddObject(m, "Entry", (PyObject *)&EntryType) < 0 ||
            PyModule_AddIntConstant(m, "OP_FUNC", OP_FUNC) < 0 ||
            PyModule_AddIntConstant(m, "OP_LIST_EQ", OP_LIST_EQ) < 0 ||
            PyModule_AddIntConstant(m, "OP_DICT_IS", OP_DICT_IS) < 0 ||
            PyModule_AddIntConstant(m, "OP_DICT_GET_IS", OP_DICT_GET_IS) < 0 ||
            PyModule_AddIntConstant(m, "OP_NOT_IN", OP_NOT_IN) < 0 ||
            PyModule_AddIntConstant(m, "OP_CELL_IS", OP_CELL_IS) < 0 ||
            PyModule_AddIntConstant(m, "OP_CELL_MISSING", OP_CELL_MISSING) < 0 ||
            PyModule_AddIntConstant(m, "OP_DICT_NUM", OP_DICT_NUM) < 0 ||
            PyModule_AddIntConstant(m, "OP_CELL_NUM", OP_CELL_NUM) < 0 ||
            PyModule_AddIntConstant(m, "OP_PY", OP_PY) < 0 ||
            PyModule_AddIntConstant(m, "ARG_ARRAY", ARG_ARRAY) < 0 ||
            PyModule_AddIntConstant(m, "ARG_FLOAT", ARG_FLOAT) < 0 ||
            PyModule_AddIntConstant(m, "ARG_BOOL", ARG_BOOL) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
