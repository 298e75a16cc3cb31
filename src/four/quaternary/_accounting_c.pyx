# cython: language_level=3, boundscheck=False, wraparound=False, overflowcheck=True, embedsignature=True, embedsignature.format=python, autotestdict=False
"""Compiled accounting core: the same functions as `_accounting_py`, some translated to C.

The rank, and the two evaluations of a realistic run (a NO, then a YES: bench_audit.py)
with their audit replay, read and write the slots of the dataclasses directly, for
states whose fields have the shapes the controller produces (exact ints, strs and enum
members, set logs, no pending lease); every other step, event and state is handed to
the pure reference module, so results, exceptions and messages are identical by
construction (checked by the differential tests). The digests are the reference
module's, over `hashlib`. The audit replays in C each evaluation that follows the
running state (compared by the states' own equality); every other receipt, and every one
that would report an error, goes through the reference `_audit_one`, which writes them.
"""

from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF

import types

from . import _accounting_py as _py
from . import _canonical
from . import _state as _st
from ._core import Verdict
from ._state import (
    CandidateDisposition, ControllerAction, ControllerState, ControllerStatus,
    DependencyRecord, EvaluationReceipt, QICTConfig,
)

cdef extern from *:
    """
    #define FOUR_TYPE(o) ((void *)Py_TYPE(o))
    """
    void *FOUR_TYPE(PyObject *o) noexcept nogil

cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef *d_member
    PyObject *PyDict_GetItem(object, object)
    int PyObject_RichCompareBool(object, object, int) except -1
    object PyType_GenericAlloc(type, Py_ssize_t)
    enum:
        Py_EQ


FORMAT_VERSION = _py.FORMAT_VERSION
__all__ = _py.__all__

include "_c_fields.pxi"
include "_c_transitions.pxi"
include "_c_audit.pxi"

# ------------------------------------------------------------------ public functions


# the reference functions: the digests, the admissible rank, events and the audit's
# result (no bench row on a realistic run justifies them in C)
fingerprint = _py.fingerprint
genesis = _py.genesis
receipt_digest = _py.receipt_digest
admissible_rank = _py.admissible_rank
handle = _py.handle
audit_result = _py.audit_result
initial_state = _py.initial_state


def rank(config, state):
    """rho = |F minus E| + B_G + B_K + B_I (verdict4's formula)."""
    if type(config) is not T_CONFIG or not _complete(state):
        return _py.rank(config, state)
    failures = _get(config, Q_FAILURES)
    return (len(failures) - _py._count(_get(state, S_EXCL), failures) + _get(state, S_EB)
            + _get(state, S_CB) + _get(state, S_DB))


def evaluate(config, state, verdict, payload, arcs, bytes prev not None):
    """One evaluation step from `state`, as a receipt chained to `prev`."""
    step = _evaluation_transition(config, state, verdict, payload, arcs)
    if step is None:
        step = _py._evaluation_transition(config, state, verdict, payload, arcs)
    action, after = step
    index = after.evaluation_count
    digest = _canonical.evaluation_digest(prev, verdict, payload, arcs, action, index)
    return _new(T_EVAL, R_ALL, (state, verdict, payload, arcs, action, after, index, digest))


def audit_feed(config, cursor, receipts, Py_ssize_t start):
    """Audit `receipts[start:]`, continuing from `cursor` (which it advances)."""
    cdef Py_ssize_t position, end = len(receipts)  # read once, as the reference does
    cdef PyObject *before
    if cursor.version != FORMAT_VERSION:  # a document of the first chain: the reference
        _py.audit_feed(config, cursor, receipts, start)
        return
    evaluations, state, digest = cursor.evaluations, cursor.state, cursor.prev
    for position in range(start, end):
        receipt = receipts[position]
        if type(receipt) is T_EVAL:
            # a before-state equal to the running state is accepted and replayed from
            # (a trace is usually audited from a fresh state equal to its first)
            before = _raw(<PyObject *>receipt, R_BEFORE)
            if before is not NULL and before != <PyObject *>state:
                try:
                    if <object>before == state:
                        state = <object>before
                except (TypeError, ValueError, AttributeError):
                    pass  # the reference audit compares them itself
        chained = digest
        if chained is None and type(state) is T_STATE:  # the first receipt's genesis
            try:
                chained = genesis(config, state)
            except (TypeError, ValueError, AttributeError):
                pass  # the reference audit reports it
        if chained is not None and type(receipt) is T_EVAL and _evaluation_replays(
                config, receipt, state, chained):
            evaluations += 1
            state, digest = _get(receipt, R_AFTER), _get(receipt, R_DIGEST)
        else:
            cursor.evaluations, cursor.state, cursor.prev = evaluations, state, digest
            _py._audit_one(config, cursor, receipt, position + 1)
            evaluations, state, digest = cursor.evaluations, cursor.state, cursor.prev
    cursor.evaluations, cursor.state, cursor.prev = evaluations, state, digest
    cursor.position = max(cursor.position, len(receipts))
