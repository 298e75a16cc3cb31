# cython: language_level=3, boundscheck=False, wraparound=False, overflowcheck=True, embedsignature=True, embedsignature.format=python, autotestdict=False
"""Compiled accounting core: the same functions as `_accounting_py`, translated to C.

The transitions, digests, rank counts and the config fingerprint read and write the
slots of the dataclasses directly. They cover every state whose fields have the
shapes the controller produces (exact ints, strs and enum members, set logs, no
dependency arcs); anything else is handed to the pure reference module, so results,
exceptions and messages are identical by construction (checked by the differential
tests). Digests use the C BLAKE2b-256 of `_blake2b.h`, which matches `hashlib`.

The audit replays each receipt in one of three ways. A continuing NO, the bulk of a
long trace, is checked in place and creates no object. Any other receipt that
follows the running state is replayed by the C transitions and compared in C.
Everything else, including every receipt that would report an error, goes through
the reference `_audit_one`, which writes the messages.
"""

cimport cython
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from cpython.list cimport PyList_GET_SIZE, PyList_GET_ITEM
from libc.string cimport memcpy, memcmp
from libc.stdlib cimport realloc, malloc, free, qsort
from libc.limits cimport LLONG_MAX
from libc.stdint cimport uint8_t

import types
from bisect import bisect_left

from . import _accounting_py as _py
from . import _state as _st
from ._core import ComputeNeed, EvidenceNeed, Verdict
from ._state import (
    CandidateDisposition, ControllerAction, ControllerEventKind, ControllerState,
    ControllerStatus, DependencyRecord, EvaluationReceipt, EventReceipt, Lease, LeaseKind,
    QICTConfig, ResolutionOutcome,
)

cdef extern from "_blake2b.h":
    """
    #define four_b2_lanes(blocks, lens, out) four_blake2b_256_x4( \
        (uint8_t (*)[128])(blocks), (lens), (unsigned char (*)[32])(out))
    """
    void four_blake2b_256(const unsigned char *data, size_t n, unsigned char *out) noexcept nogil
    void four_b2_lanes(void *blocks, const size_t *lens, void *out) noexcept nogil
    const char *four_blake2b_init() noexcept

cdef extern from *:
    """
    #define FOUR_TYPE(o) ((void *)Py_TYPE(o))
    #define FOUR_SPAN(end, start) ((Py_ssize_t)((end) - (start)))
    #define four_utf8 PyUnicode_AsUTF8AndSize
    #if defined(__GNUC__) || defined(__clang__)
    #define FOUR_PREFETCH(p) __builtin_prefetch(p)
    #else
    #define FOUR_PREFETCH(p) ((void)(p))
    #endif
    """
    void *FOUR_TYPE(PyObject *o) noexcept nogil
    Py_ssize_t FOUR_SPAN(const unsigned char *end, const unsigned char *start) noexcept nogil
    void FOUR_PREFETCH(const void *p) noexcept nogil
    const char *four_utf8(PyObject *text, Py_ssize_t *size) noexcept

cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef *d_member
    ctypedef struct setentry:
        PyObject *key
        Py_hash_t hash
    ctypedef struct PySetObject:
        Py_ssize_t mask
        setentry *table
    ctypedef struct PyASCIIObject:
        Py_hash_t hash
    long long PyLong_AsLongLongAndOverflow(object, int *) noexcept
    PyObject *PyDict_GetItem(object, object)
    Py_ssize_t PySet_GET_SIZE(object)
    int PySet_Contains(object, object) except -1
    int PySequence_Contains(object, object) except -1
    int PyObject_RichCompareBool(object, object, int) except -1
    object PyType_GenericAlloc(type, Py_ssize_t)
    void PyErr_Clear()
    enum:
        Py_EQ


FORMAT_VERSION = _py.FORMAT_VERSION
_BLAKE2B_LANES = four_blake2b_init().decode()  # "avx2" or "generic": which x4 hash runs

include "_c_fields.pxi"
include "_c_digest.pxi"
include "_c_transitions.pxi"
include "_c_audit.pxi"

# ------------------------------------------------------------------ public functions


def fingerprint(config):
    """BLAKE2b-256 of the canonical encoding of the config's ten resolved fields."""
    cache = _py._FINGERPRINTS  # shared with the pure module: one cache, same eviction
    cached = cache.get(id(config))
    if cached is not None and cached[0] is config:
        return cached[1]
    if type(config) is not T_CONFIG or not _config_complete(config):
        return _py.fingerprint(config)
    result = _fingerprint(config)
    if len(cache) >= _py._FINGERPRINT_CACHE_SIZE:
        cache.pop(next(iter(cache)))
    cache[id(config)] = (config, result)
    return result


def genesis(config, state):
    """The digest a trace starting at `state` under `config` chains from."""
    fingerprint(config)  # computed here in C; the reference genesis finds it cached
    return _py.genesis(config, state)


def receipt_digest(bytes prev not None, receipt):
    """The digest `receipt` must carry when it follows a receipt whose digest is `prev`."""
    if isinstance(receipt, EvaluationReceipt):
        return _evaluation_digest(prev, receipt.verdict, receipt.payload,
                                  receipt.dependency_arcs, receipt.action,
                                  receipt.evaluation_index)
    return _event_digest(prev, receipt.event, receipt.action)


def rank(config, state):
    """rho = |F minus E| + B_G + B_K + B_I (verdict4's formula)."""
    if type(config) is not T_CONFIG or not _complete(state):
        return _py.rank(config, state)
    failures = _get(config, Q_FAILURES)
    return (len(failures) - _count(_get(state, S_EXCL), failures) + _get(state, S_EB)
            + _get(state, S_CB) + _get(state, S_DB))


def admissible_rank(config, state):
    """A tighter rank: only opportunities that can still be consumed."""
    if type(config) is not T_CONFIG or not _complete(state):
        return _py.admissible_rank(config, state)
    admissible = _get(config, Q_ADMISSIBLE)
    deps_ok = _get(config, Q_ADMISSIBLE_DEPS)
    if admissible is None or deps_ok is None:
        return _py.admissible_rank(config, state)
    evidence = _get(config, Q_EVIDENCE)
    compute = _get(config, Q_COMPUTE)
    used = _get(_get(state, S_DEPS), D_USED)
    return (
        len(admissible)
        - _count(_get(state, S_EXCL), admissible)
        + min(_get(state, S_EB), len(evidence) - _count(_get(state, S_EVID), evidence))
        + min(_get(state, S_CB), len(compute) - _count(_get(state, S_COMP), compute))
        + min(_get(state, S_DB), len(deps_ok) - _count(used, deps_ok))
    )


def evaluate(config, state, verdict, payload, arcs, bytes prev not None):
    """One evaluation step from `state`, as a receipt chained to `prev`."""
    step = _evaluation_transition(config, state, verdict, payload, arcs)
    if step is None:
        step = _py._evaluation_transition(config, state, verdict, payload, arcs)
    action, after = step
    index = after.evaluation_count
    digest = _evaluation_digest(prev, verdict, payload, arcs, action, index)
    receipt = PyType_GenericAlloc(T_EVAL, 0)
    _put(receipt, R_BEFORE, state)
    _put(receipt, R_VERDICT, verdict)
    _put(receipt, R_PAYLOAD, payload)
    _put(receipt, R_ARCS, arcs)
    _put(receipt, R_ACTION, action)
    _put(receipt, R_AFTER, after)
    _put(receipt, R_INDEX, index)
    _put(receipt, R_DIGEST, digest)
    return receipt


def handle(config, state, event, bytes prev not None):
    """One event step from `state`, as a receipt chained to `prev`."""
    step = _event_transition(state, event)
    if step is None:
        step = _py._event_transition(state, event)
    action, after = step
    digest = _event_digest(prev, event, action)
    receipt = PyType_GenericAlloc(T_EVENT, 0)
    _put(receipt, E_BEFORE, state)
    _put(receipt, E_EVENT, event)
    _put(receipt, E_ACTION, action)
    _put(receipt, E_AFTER, after)
    _put(receipt, E_DIGEST, digest)
    return receipt


def audit_feed(config, cursor, receipts, Py_ssize_t start):
    """Audit `receipts[start:]`, continuing from `cursor` (which it advances)."""
    _Replay(config, cursor).feed(receipts, start)
    cursor.position = max(cursor.position, len(receipts))


def audit_result(config, cursor, head):
    """The AuditResult for everything fed to `cursor` so far (the cursor is unchanged)."""
    return _py.audit_result(config, cursor, head)
