# cython: language_level=3, boundscheck=False, wraparound=False, overflowcheck=True, embedsignature=True, embedsignature.format=python, autotestdict=False
"""Compiled accounting core: the same functions as `_accounting_py`, translated to C.

The transitions and rank counts read and write the slots of the dataclasses directly.
They cover every state whose fields have the shapes the controller produces (exact
ints, strs and enum members, set logs, no dependency arcs); anything else is handed to
the pure reference module, so results, exceptions and messages are identical by
construction (checked by the differential tests). The digests are the reference
module's, over `hashlib`: a receipt's hash is a small part of its replay.

The audit replays each receipt that follows the running state by the C transitions
and compares in C; everything else, including every receipt that would report an
error, goes through the reference `_audit_one`, which writes the messages.
"""

cimport cython
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.list cimport PyList_GET_SIZE, PyList_GET_ITEM

import types
from bisect import bisect_left

from json.encoder import encode_basestring_ascii as _quote

from four._chain import link_text as _link_text

from . import _accounting_py as _py
from . import _canonical
from . import _state as _st
from ._core import ComputeNeed, EvidenceNeed, Verdict
from ._state import (
    CandidateDisposition, ControllerAction, ControllerEventKind, ControllerState,
    ControllerStatus, DependencyRecord, EvaluationReceipt, EventReceipt, Lease, LeaseKind,
    QICTConfig, ResolutionOutcome,
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
    int PySequence_Contains(object, object) except -1
    int PyObject_RichCompareBool(object, object, int) except -1
    object PyType_GenericAlloc(type, Py_ssize_t)
    enum:
        Py_EQ


FORMAT_VERSION = _py.FORMAT_VERSION

include "_c_fields.pxi"
include "_c_transitions.pxi"
include "_c_audit.pxi"

# ------------------------------------------------------------------ public functions


# the digests: the reference functions, over hashlib
fingerprint = _py.fingerprint
genesis = _py.genesis
receipt_digest = _py.receipt_digest


cdef object _evaluation_digest(prev, verdict, payload, arcs, action, index):
    """`_canonical.evaluation_digest`, its canonical text written here for the common
    shapes (a str or no payload, no arcs): a replay of 16,000 receipts spends most of
    its time on their digests, and json's encoder takes 3.7 us for this text, this 0.3
    (bench/README.md, "quaternary"; tests/quaternary/test_differential.py)."""
    if (type(verdict) is Verdict and type(action) is ControllerAction and type(index) is int
            and (payload is None or type(payload) is str)
            and (type(arcs) is frozenset or type(arcs) is tuple) and not arcs):
        text = (f'{{"action":{_quote(action._value_)},"arcs":[],"index":{index},'
                f'"payload":{"null" if payload is None else _quote(payload)},'
                f'"verdict":{<long>verdict}}}')
        return _link_text(prev, '"evaluation"', text)
    return _canonical.evaluation_digest(prev, verdict, payload, arcs, action, index)


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
    digest = _canonical.event_digest(prev, event, action)
    receipt = PyType_GenericAlloc(T_EVENT, 0)
    _put(receipt, E_BEFORE, state)
    _put(receipt, E_EVENT, event)
    _put(receipt, E_ACTION, action)
    _put(receipt, E_AFTER, after)
    _put(receipt, E_DIGEST, digest)
    return receipt


def audit_feed(config, cursor, receipts, Py_ssize_t start):
    """Audit `receipts[start:]`, continuing from `cursor` (which it advances)."""
    if cursor.version != FORMAT_VERSION:  # a document of the first chain: the reference
        _py.audit_feed(config, cursor, receipts, start)
        return
    _Replay(config, cursor).feed(receipts, start)
    cursor.position = max(cursor.position, len(receipts))


def audit_result(config, cursor, head):
    """The AuditResult for everything fed to `cursor` so far (the cursor is unchanged)."""
    return _py.audit_result(config, cursor, head)
