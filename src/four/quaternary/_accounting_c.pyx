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

from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from cpython.list cimport PyList_GET_SIZE, PyList_GET_ITEM
from libc.string cimport memcpy, memcmp
from libc.stdlib cimport realloc, malloc, free, qsort
from libc.limits cimport LLONG_MAX

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
    void four_blake2b_256(const unsigned char *data, size_t n, unsigned char *out) noexcept nogil

cdef extern from *:
    """
    #define FOUR_TYPE(o) ((void *)Py_TYPE(o))
    #define four_utf8 PyUnicode_AsUTF8AndSize
    #if defined(__GNUC__) || defined(__clang__)
    #define FOUR_PREFETCH(p) __builtin_prefetch(p)
    #else
    #define FOUR_PREFETCH(p) ((void)(p))
    #endif
    """
    void *FOUR_TYPE(PyObject *o) noexcept nogil
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

# ------------------------------------------------------------------ slot access


cdef Py_ssize_t _offset(type cls, str name) except -1:
    descr = cls.__dict__[name]
    if isinstance(descr, _st._LazySet):
        descr = descr.slot
    if type(descr) is not types.MemberDescriptorType:
        raise ImportError(f"{cls.__name__}.{name} is not a slot")
    return (<PyMemberDescrObject *>descr).d_member.offset


cdef inline PyObject *_raw(PyObject *obj, Py_ssize_t offset) noexcept:
    """The borrowed value of a slot, NULL when it is unset."""
    return (<PyObject **>((<char *>obj) + offset))[0]


cdef inline object _get(object obj, Py_ssize_t offset):
    cdef PyObject *value = _raw(<PyObject *>obj, offset)
    if value is NULL:
        raise AttributeError("unset slot")
    return <object>value


cdef inline void _put(object obj, Py_ssize_t offset, object value):
    cdef PyObject **slot = <PyObject **>((<char *><PyObject *>obj) + offset)
    cdef PyObject *old = slot[0]
    Py_INCREF(value)
    slot[0] = <PyObject *>value
    Py_XDECREF(old)


cdef type T_STATE = ControllerState
cdef type T_RECORD = DependencyRecord
cdef type T_CONFIG = QICTConfig
cdef type T_EVAL = EvaluationReceipt
cdef type T_EVENT = EventReceipt
cdef type T_EVENT_DATA = _st.ControllerEvent
cdef type T_LEASE = Lease
cdef type T_PREFIX = _st._Prefix
cdef type T_LOG = _st._Log
cdef type T_COUNT = _st._Count
cdef type T_EVIDENCE = EvidenceNeed
cdef type T_COMPUTE = ComputeNeed

cdef void *P_STATE = <void *>T_STATE
cdef void *P_RECORD = <void *>T_RECORD
cdef void *P_EVAL = <void *>T_EVAL
cdef void *P_LEASE = <void *>T_LEASE
cdef void *P_PREFIX = <void *>T_PREFIX
cdef void *P_LOG = <void *>T_LOG
cdef void *P_STR = <void *>str
cdef void *P_INT = <void *>int
cdef void *P_BYTES = <void *>bytes
cdef void *P_FROZENSET = <void *>frozenset
cdef void *P_LIST = <void *>list
cdef void *P_TUPLE = <void *>tuple

cdef Py_ssize_t S_EXCL = _offset(T_STATE, "exclusions")
cdef Py_ssize_t S_EVID = _offset(T_STATE, "used_evidence")
cdef Py_ssize_t S_COMP = _offset(T_STATE, "used_compute")
cdef Py_ssize_t S_DEPS = _offset(T_STATE, "dependencies")
cdef Py_ssize_t S_EB = _offset(T_STATE, "evidence_budget")
cdef Py_ssize_t S_CB = _offset(T_STATE, "compute_budget")
cdef Py_ssize_t S_DB = _offset(T_STATE, "dependency_budget")
cdef Py_ssize_t S_STATUS = _offset(T_STATE, "status")
cdef Py_ssize_t S_DISP = _offset(T_STATE, "candidate_disposition")
cdef Py_ssize_t S_COUNT = _offset(T_STATE, "evaluation_count")
cdef Py_ssize_t S_CLOCK = _offset(T_STATE, "clock")
cdef Py_ssize_t S_LEASE = _offset(T_STATE, "pending_lease")
cdef Py_ssize_t S_HELD = _offset(T_STATE, "held_reason")
cdef Py_ssize_t S_ALL[13]
S_ALL[:] = [S_EXCL, S_EVID, S_COMP, S_DEPS, S_EB, S_CB, S_DB, S_STATUS, S_DISP, S_COUNT,
            S_CLOCK, S_LEASE, S_HELD]

cdef Py_ssize_t D_USED = _offset(T_RECORD, "used")
cdef Py_ssize_t D_UNRESOLVED = _offset(T_RECORD, "unresolved")
cdef Py_ssize_t D_RELATION = _offset(T_RECORD, "relation")
cdef Py_ssize_t D_OUTCOMES = _offset(T_RECORD, "outcomes")

cdef Py_ssize_t Q_FAILURES = _offset(T_CONFIG, "failure_alphabet")
cdef Py_ssize_t Q_EVIDENCE = _offset(T_CONFIG, "evidence_alphabet")
cdef Py_ssize_t Q_COMPUTE = _offset(T_CONFIG, "compute_alphabet")
cdef Py_ssize_t Q_DEPENDENCY = _offset(T_CONFIG, "dependency_alphabet")
cdef Py_ssize_t Q_EB = _offset(T_CONFIG, "evidence_budget")
cdef Py_ssize_t Q_CB = _offset(T_CONFIG, "compute_budget")
cdef Py_ssize_t Q_DB = _offset(T_CONFIG, "dependency_budget")
cdef Py_ssize_t Q_ADMISSIBLE = _offset(T_CONFIG, "admissible_failures")
cdef Py_ssize_t Q_ADMISSIBLE_DEPS = _offset(T_CONFIG, "admissible_dependencies")
cdef Py_ssize_t Q_TICKS = _offset(T_CONFIG, "lease_ticks")

cdef Py_ssize_t R_BEFORE = _offset(T_EVAL, "before")
cdef Py_ssize_t R_VERDICT = _offset(T_EVAL, "verdict")
cdef Py_ssize_t R_PAYLOAD = _offset(T_EVAL, "payload")
cdef Py_ssize_t R_ARCS = _offset(T_EVAL, "dependency_arcs")
cdef Py_ssize_t R_ACTION = _offset(T_EVAL, "action")
cdef Py_ssize_t R_AFTER = _offset(T_EVAL, "after")
cdef Py_ssize_t R_INDEX = _offset(T_EVAL, "evaluation_index")
cdef Py_ssize_t R_DIGEST = _offset(T_EVAL, "digest")

cdef Py_ssize_t E_BEFORE = _offset(T_EVENT, "before")
cdef Py_ssize_t E_EVENT = _offset(T_EVENT, "event")
cdef Py_ssize_t E_ACTION = _offset(T_EVENT, "action")
cdef Py_ssize_t E_AFTER = _offset(T_EVENT, "after")
cdef Py_ssize_t E_DIGEST = _offset(T_EVENT, "digest")

cdef Py_ssize_t V_KIND = _offset(T_EVENT_DATA, "kind")
cdef Py_ssize_t V_LEASE_ID = _offset(T_EVENT_DATA, "lease_id")
cdef Py_ssize_t V_OUTCOME = _offset(T_EVENT_DATA, "outcome")
cdef Py_ssize_t V_DEPENDENCY = _offset(T_EVENT_DATA, "dependency")
cdef Py_ssize_t V_CLOCK = _offset(T_EVENT_DATA, "clock")

cdef Py_ssize_t L_ID = _offset(T_LEASE, "lease_id")
cdef Py_ssize_t L_KIND = _offset(T_LEASE, "kind")
cdef Py_ssize_t L_OBLIGATION = _offset(T_LEASE, "obligation")
cdef Py_ssize_t L_DEADLINE = _offset(T_LEASE, "deadline")

cdef Py_ssize_t P_LOG_SLOT = _offset(T_PREFIX, "log")
cdef Py_ssize_t P_N = _offset(T_PREFIX, "n")
cdef Py_ssize_t G_BASE_KEYS = _offset(T_LOG, "base_keys")
cdef Py_ssize_t G_KEYS = _offset(T_LOG, "keys")
cdef Py_ssize_t G_INDEX = _offset(T_LOG, "index")
cdef Py_ssize_t G_COUNTS = _offset(T_LOG, "counts")
cdef Py_ssize_t C_ALPHABET = _offset(T_COUNT, "alphabet")
cdef Py_ssize_t C_BASE = _offset(T_COUNT, "base")
cdef Py_ssize_t C_CHECKED = _offset(T_COUNT, "checked")
cdef Py_ssize_t C_MISSES = _offset(T_COUNT, "misses")

cdef Py_ssize_t N_EVIDENCE = _offset(T_EVIDENCE, "evidence")
cdef Py_ssize_t N_STEP = _offset(T_COMPUTE, "step")

cdef object RUNNING = ControllerStatus.RUNNING
cdef object ACCEPTED = ControllerStatus.ACCEPTED
cdef object HELD = ControllerStatus.HELD
cdef object SOURCE_ADMISSIBLE = CandidateDisposition.SOURCE_ADMISSIBLE
cdef object TERMINALLY_ACCEPTED = CandidateDisposition.TERMINALLY_ACCEPTED
cdef object V_NO = Verdict.NO
cdef object V_YES = Verdict.YES
cdef object V_MAYBE = Verdict.MAYBE
cdef object V_IFF = Verdict.IFF
cdef object A_EXCLUDE = ControllerAction.EXCLUDE_RETRY
cdef object A_ADMIT = ControllerAction.ADMIT_NEXT
cdef object A_GATHER = ControllerAction.GATHER
cdef object A_BIND = ControllerAction.BIND
cdef object A_ACCEPT = ControllerAction.EXIT_ACCEPT
cdef object A_REEVALUATE = ControllerAction.REEVALUATE
cdef object A_WAIT = ControllerAction.WAIT
cdef object A_EXPIRE = ControllerAction.EXPIRE
cdef object A_HOLD = ControllerAction.HOLD
cdef object K_EVIDENCE_RETURNED = ControllerEventKind.EVIDENCE_RETURNED
cdef object K_RESOLVED = ControllerEventKind.DEPENDENCY_RESOLVED
cdef object K_ADVANCE = ControllerEventKind.ADVANCE_CLOCK
cdef object K_EXPIRE = ControllerEventKind.EXPIRE
cdef object K_INVALIDATE = ControllerEventKind.INVALIDATE_DEPENDENCY
cdef object LEASE_EVIDENCE = LeaseKind.EVIDENCE
cdef object LEASE_DEPENDENCY = LeaseKind.DEPENDENCY

cdef PyObject *O_NONE = <PyObject *>None
cdef PyObject *O_RUNNING = <PyObject *>RUNNING
cdef PyObject *O_NO = <PyObject *>V_NO
cdef PyObject *O_EXCLUDE = <PyObject *>A_EXCLUDE

# Enum members are singletons: match them by identity, most frequent first.
cdef list _ENUM_LIST = [m for e in (Verdict, ControllerAction, ControllerEventKind,
                                    ResolutionOutcome, LeaseKind, ControllerStatus,
                                    CandidateDisposition) for m in e]
cdef list _ENUM_ENCODED = [_py._enc_bytes(m) for m in _ENUM_LIST]
cdef PyObject *_ENUM_MEMBERS[64]
cdef Py_ssize_t _N_ENUMS = len(_ENUM_LIST)
assert _N_ENUMS <= 64
for _i, _m in enumerate(_ENUM_LIST):
    _ENUM_MEMBERS[_i] = <PyObject *>_m

# ------------------------------------------------------------------ field shapes


cdef inline bint _is(PyObject *value, void *kind) noexcept:
    return value is not NULL and FOUR_TYPE(value) == kind


cdef inline bint _as_ll(PyObject *value, long long *out) noexcept:
    """Store an exact int that fits in 64 bits; False for anything else (no coercion)."""
    cdef int overflow = 0
    if not _is(value, P_INT):
        return False
    out[0] = PyLong_AsLongLongAndOverflow(<object>value, &overflow)
    return not overflow


cdef inline bint _set_field(PyObject *value) noexcept:
    return _is(value, P_PREFIX) or _is(value, P_FROZENSET)


cdef bint _complete_lease(PyObject *lease) noexcept:
    cdef PyObject *kind = _raw(lease, L_KIND)
    return (_is(_raw(lease, L_ID), P_STR) and _is(_raw(lease, L_OBLIGATION), P_STR)
            and _is(_raw(lease, L_DEADLINE), P_INT)
            and (kind == <PyObject *>LEASE_EVIDENCE or kind == <PyObject *>LEASE_DEPENDENCY))


cdef bint _complete_record(PyObject *record) noexcept:
    cdef PyObject *outcomes = _raw(record, D_OUTCOMES)
    return (FOUR_TYPE(record) == P_RECORD and _set_field(_raw(record, D_USED))
            and _is(_raw(record, D_UNRESOLVED), P_FROZENSET)
            and _is(_raw(record, D_RELATION), P_FROZENSET)
            and (_is(outcomes, P_PREFIX) or _is(outcomes, P_TUPLE)))


cdef bint _complete(object state) noexcept:
    """Whether every field of `state` has a shape the C transitions translate (the
    shapes the controller produces); the reference module decides every other state."""
    cdef PyObject *s = <PyObject *>state
    cdef PyObject *value
    cdef Py_ssize_t i
    if FOUR_TYPE(s) != P_STATE:
        return False
    for i in range(4, 7):
        if not _is(_raw(s, S_ALL[i]), P_INT):
            return False
    if not (_is(_raw(s, S_COUNT), P_INT) and _is(_raw(s, S_CLOCK), P_INT)):
        return False
    if not (_set_field(_raw(s, S_EXCL)) and _set_field(_raw(s, S_EVID))
            and _set_field(_raw(s, S_COMP))):
        return False
    value = _raw(s, S_STATUS)
    if not (value == O_RUNNING or value == <PyObject *>ACCEPTED or value == <PyObject *>HELD):
        return False
    value = _raw(s, S_DISP)
    if not (value == O_NONE or value == <PyObject *>SOURCE_ADMISSIBLE
            or value == <PyObject *>TERMINALLY_ACCEPTED):
        return False
    value = _raw(s, S_HELD)
    if not (value == O_NONE or _is(value, P_STR)):
        return False
    value = _raw(s, S_LEASE)
    if not (value == O_NONE or (_is(value, P_LEASE) and _complete_lease(value))):
        return False
    value = _raw(s, S_DEPS)
    return value is not NULL and _complete_record(value)


# ------------------------------------------------------------------ canonical encoding

cdef unsigned char *_buf = NULL
cdef Py_ssize_t _len = 0
cdef Py_ssize_t _cap = 0


cdef int _reserve(Py_ssize_t extra) except -1:
    global _buf, _cap
    cdef Py_ssize_t want = _len + extra
    cdef unsigned char *grown
    if want <= _cap:
        return 0
    want = max(want, 2 * _cap, 256)
    grown = <unsigned char *>realloc(_buf, want)
    if grown is NULL:
        raise MemoryError()
    _buf = grown
    _cap = want
    return 0


cdef int _write(const char *data, Py_ssize_t n) except -1:
    global _len
    _reserve(n)
    memcpy(_buf + _len, data, n)
    _len += n
    return 0


cdef inline unsigned char *_digits(unsigned char *out, long long number) noexcept nogil:
    """Write the decimal digits of `number` (the full long long range) at `out`."""
    cdef unsigned char scratch[24]
    cdef int k = 24
    cdef unsigned long long magnitude
    cdef bint negative = number < 0
    if negative:
        magnitude = <unsigned long long>(-(number + 1)) + 1
    else:
        magnitude = <unsigned long long>number
    while True:
        k -= 1
        scratch[k] = <unsigned char>(48 + magnitude % 10)
        magnitude //= 10
        if magnitude == 0:
            break
    if negative:
        k -= 1
        scratch[k] = 45
    memcpy(out, scratch + k, 24 - k)
    return out + (24 - k)


cdef int _write_int_raw(long long number) except -1:
    global _len
    _reserve(24)
    _len = _digits(_buf + _len, number) - _buf
    return 0


cdef int _write_int(long long number) except -1:
    _write("i", 1)
    _write_int_raw(number)
    return _write(";", 1)


cdef int _write_str(object text) except -1:
    """Encode an exact str as s<len>:<utf-8>; 0 if it needs the general path (surrogates)."""
    cdef Py_ssize_t size
    cdef const char *data = four_utf8(<PyObject *>text, &size)
    if data is NULL:
        PyErr_Clear()
        return 0
    _write("s", 1)
    _write_int_raw(size)
    _write(":", 1)
    _write(data, size)
    return 1


cdef int _write_value(object value) except -1:
    """Append the canonical encoding of `value`; 0 when only the general path can."""
    cdef type kind = type(value)
    cdef int overflow = 0
    cdef long long number
    cdef Py_ssize_t i
    if kind is str:
        return _write_str(value)
    if value is None:
        _write("N", 1)
        return 1
    if kind is int:
        number = PyLong_AsLongLongAndOverflow(value, &overflow)
        if overflow:
            return 0
        _write_int(number)
        return 1
    if kind is bool:
        _write("T" if value else "F", 1)
        return 1
    for i in range(_N_ENUMS):
        if _ENUM_MEMBERS[i] == <PyObject *>value:
            encoded = <bytes>_ENUM_ENCODED[i]
            _write(PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded))
            return 1
    if kind is T_EVIDENCE:
        _write("E", 1)
        return _write_value(_get(value, N_EVIDENCE))
    if kind is T_COMPUTE:
        _write("K", 1)
        return _write_value(_get(value, N_STEP))
    if kind is frozenset and len(value) == 0:
        _write("{0:}", 4)
        return 1
    return 0


ctypedef struct _Span:
    const unsigned char *data
    Py_ssize_t size


cdef int _span_order(const void *a, const void *b) noexcept nogil:
    """bytes ordering: the common prefix, then the shorter first."""
    cdef const _Span *x = <const _Span *>a
    cdef const _Span *y = <const _Span *>b
    cdef Py_ssize_t n = x.size if x.size < y.size else y.size
    cdef int order = memcmp(x.data, y.data, n)
    if order != 0:
        return order
    return (x.size > y.size) - (x.size < y.size)


cdef int _write_str_set(object values) except -1:
    """Append the encoding of a frozenset of exact strs: the sorted item encodings,
    sorted in C; 0 (nothing written) when an item needs the general path."""
    cdef Py_ssize_t count = len(values)
    cdef Py_ssize_t total = 0, size, i = 0
    cdef const char *data
    cdef _Span *spans
    cdef unsigned char *encoded = NULL
    cdef unsigned char *at
    if count == 0:
        _write("{0:}", 4)
        return 1
    spans = <_Span *>malloc(count * sizeof(_Span))
    if spans is NULL:
        raise MemoryError()
    try:
        for item in values:  # first pass: the utf-8 of every item
            if type(item) is not str or i >= count:
                return 0
            data = four_utf8(<PyObject *>item, &size)
            if data is NULL:
                PyErr_Clear()
                return 0
            spans[i].data = <const unsigned char *>data
            spans[i].size = size
            total += size + 24
            i += 1
        if i != count:
            return 0
        encoded = <unsigned char *>malloc(total)
        if encoded is NULL:
            raise MemoryError()
        at = encoded
        for i in range(count):  # second pass: s<len>:<utf-8>, spans now over the encodings
            size = spans[i].size
            data = <const char *>spans[i].data
            spans[i].data = at
            at[0] = 115  # "s"
            at = _digits(at + 1, size)
            at[0] = 58  # ":"
            memcpy(at + 1, data, size)
            at += 1 + size
            spans[i].size = at - spans[i].data
        qsort(spans, count, sizeof(_Span), _span_order)
        _write("{", 1)
        _write_int_raw(count)
        _write(":", 1)
        for i in range(count):
            _write(<const char *>spans[i].data, spans[i].size)
        _write("}", 1)
        return 1
    finally:
        free(spans)
        free(encoded)


cdef bytes _hash_buffer():
    cdef unsigned char out[32]
    four_blake2b_256(_buf, _len, out)
    return PyBytes_FromStringAndSize(<char *>out, 32)


cdef bint _buffer_hashes_to(object claimed) except -1:
    cdef unsigned char out[32]
    if type(claimed) is not bytes or PyBytes_GET_SIZE(claimed) != 32:
        return False
    four_blake2b_256(_buf, _len, out)
    return memcmp(out, PyBytes_AS_STRING(claimed), 32) == 0


cdef bint _write_evaluation(bytes prev, object verdict, object payload, object arcs,
                            object action, object index) except -1:
    """Fill the buffer with the message of an evaluation receipt; False if it needs the
    general path."""
    global _len
    _len = 0
    _write("R", 1)
    _write(PyBytes_AS_STRING(prev), PyBytes_GET_SIZE(prev))
    _write("V", 1)
    return (_write_value(verdict) and _write_value(payload) and _write_value(arcs)
            and _write_value(action) and _write_value(index))


cdef bytes _evaluation_digest(bytes prev, object verdict, object payload, object arcs,
                              object action, object index):
    if _write_evaluation(prev, verdict, payload, arcs, action, index):
        return _hash_buffer()
    return _py._evaluation_digest(prev, verdict, payload, arcs, action, index)


cdef bint _evaluation_digest_is(object claimed, bytes prev, object verdict, object payload,
                                object arcs, object action, object index) except -1:
    if _write_evaluation(prev, verdict, payload, arcs, action, index):
        return _buffer_hashes_to(claimed)
    return _py._evaluation_digest(prev, verdict, payload, arcs, action, index) == claimed


cdef bytes _event_digest(bytes prev, object event, object action):
    global _len
    _len = 0
    _write("R", 1)
    _write(PyBytes_AS_STRING(prev), PyBytes_GET_SIZE(prev))
    _write("W", 1)
    if (type(event) is T_EVENT_DATA and _write_value(_get(event, V_KIND))
            and _write_value(_get(event, V_LEASE_ID)) and _write_value(_get(event, V_OUTCOME))
            and _write_value(_get(event, V_DEPENDENCY)) and _write_value(_get(event, V_CLOCK))
            and _write_value(action)):
        return _hash_buffer()
    return _py._event_digest(prev, event, action)


cdef bint _config_complete(object config) noexcept:
    cdef Py_ssize_t offset
    for offset in (Q_FAILURES, Q_EVIDENCE, Q_COMPUTE, Q_DEPENDENCY, Q_EB, Q_CB, Q_DB,
                   Q_ADMISSIBLE, Q_ADMISSIBLE_DEPS, Q_TICKS):
        if _raw(<PyObject *>config, offset) is NULL:
            return False
    return True


cdef bytes _fingerprint(object config):
    """The reference `_fingerprint`, with the alphabets encoded and sorted in C."""
    global _len
    cdef object value
    _len = 0
    _write("C(", 2)
    for offset in (Q_FAILURES, Q_EVIDENCE, Q_COMPUTE, Q_DEPENDENCY):
        value = _get(config, offset)
        if type(value) is not frozenset or not _write_str_set(value):
            return _py._fingerprint(config)
    for offset in (Q_EB, Q_CB, Q_DB):
        if not _write_value(_get(config, offset)):
            return _py._fingerprint(config)
    for offset in (Q_ADMISSIBLE, Q_ADMISSIBLE_DEPS):
        value = _get(config, offset)
        if value is None:
            value = frozenset()
        if type(value) is not frozenset or not _write_str_set(value):
            return _py._fingerprint(config)
    if not _write_value(_get(config, Q_TICKS)):
        return _py._fingerprint(config)
    _write(")", 1)
    return _hash_buffer()


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


# ------------------------------------------------------------------ rank


cdef object _count(object raw, object alphabet):
    """`_accounting_py._count`: members of a set field in `alphabet`, via the log's
    membership record, which is extended in C."""
    cdef object log, n, entry, keys, misses
    cdef Py_ssize_t i, end
    if type(raw) is not T_PREFIX:
        return _py._count(raw, alphabet)
    log = _get(raw, P_LOG_SLOT)
    n = _get(raw, P_N)
    if type(log) is not T_LOG or type(n) is not int:
        return _py._count(raw, alphabet)
    entry = log.count_entry(alphabet)
    end = n
    i = _get(entry, C_CHECKED)
    if i < end:
        keys = _get(log, G_KEYS)
        misses = _get(entry, C_MISSES)
        while i < end:
            if not PySequence_Contains(alphabet, keys[i]):
                misses.append(i)
            i += 1
        _put(entry, C_CHECKED, n)
    misses = _get(entry, C_MISSES)
    return _get(entry, C_BASE) + n - (bisect_left(misses, n) if misses else 0)


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


# ------------------------------------------------------------------ transitions


cdef object _new_state(object excl, object evid, object comp, object deps, object eb,
                       object cb, object db, object status, object disposition, object count,
                       object clock, object lease, object held):
    """`_state.make_state` in C: a ControllerState without re-running validation."""
    state = PyType_GenericAlloc(T_STATE, 0)
    _put(state, S_EXCL, excl)
    _put(state, S_EVID, evid)
    _put(state, S_COMP, comp)
    _put(state, S_DEPS, deps)
    _put(state, S_EB, eb)
    _put(state, S_CB, cb)
    _put(state, S_DB, db)
    _put(state, S_STATUS, status)
    _put(state, S_DISP, disposition)
    _put(state, S_COUNT, count)
    _put(state, S_CLOCK, clock)
    _put(state, S_LEASE, lease)
    _put(state, S_HELD, held)
    return state


cdef object _new_record(object used, object unresolved, object relation, object outcomes):
    record = PyType_GenericAlloc(T_RECORD, 0)
    _put(record, D_USED, used)
    _put(record, D_UNRESOLVED, unresolved)
    _put(record, D_RELATION, relation)
    _put(record, D_OUTCOMES, outcomes)
    return record


cdef object _new_lease(str kind_name, object kind, str obligation, object index,
                       object deadline):
    lease = PyType_GenericAlloc(T_LEASE, 0)
    _put(lease, L_ID, f"{kind_name}:{obligation}:{index}")
    _put(lease, L_KIND, kind)
    _put(lease, L_OBLIGATION, obligation)
    _put(lease, L_DEADLINE, deadline)
    return lease


cdef object _prefix_of(object raw):
    """`_state.set_prefix` for the two shapes `_complete` admits."""
    return raw if type(raw) is T_PREFIX else _st.set_prefix(raw)


cdef bint _prefix_contains(object prefix, object key) except -1:
    """`_Prefix.contains` in C."""
    cdef object log = _get(prefix, P_LOG_SLOT)
    cdef PyObject *position
    if key in _get(log, G_BASE_KEYS):
        return True
    position = PyDict_GetItem(_get(log, G_INDEX), key)
    return position is not NULL and <object>position < _get(prefix, P_N)


cdef object _hold(object state, object index, str reason):
    """`_accounting_py._hold_base`."""
    return _new_state(_get(state, S_EXCL), _get(state, S_EVID), _get(state, S_COMP),
                      _get(state, S_DEPS), _get(state, S_EB), _get(state, S_CB),
                      _get(state, S_DB), HELD, None, index, _get(state, S_CLOCK), None, reason)


cdef object _evaluation_transition(object config, object state, object verdict,
                                   object payload, object arcs):
    """(action, after) exactly as `_accounting_py._evaluation_transition` computes them,
    or None when the reference module must decide (its errors are raised alike)."""
    cdef object status, index, key, prefix, lease, deps, used, ticks
    if type(config) is not T_CONFIG or not _complete(state):
        return None
    status = _get(state, S_STATUS)
    if status is not RUNNING:
        raise ValueError("A terminal controller cannot evaluate another candidate.")
    if _get(state, S_LEASE) is not None:
        raise ValueError("A pending lease must return or expire before re-evaluation.")
    index = _get(state, S_COUNT) + 1
    excl = _get(state, S_EXCL)
    evid = _get(state, S_EVID)
    comp = _get(state, S_COMP)
    deps = _get(state, S_DEPS)
    eb = _get(state, S_EB)
    cb = _get(state, S_CB)
    db = _get(state, S_DB)
    clock = _get(state, S_CLOCK)
    ticks = _get(config, Q_TICKS)
    if type(ticks) is not int:
        return None
    if verdict is V_YES:
        return A_ACCEPT, _new_state(excl, evid, comp, deps, eb, cb, db, ACCEPTED,
                                    TERMINALLY_ACCEPTED, index, clock, None, None)
    if verdict is V_NO:
        admissible = _get(config, Q_ADMISSIBLE)
        if type(payload) is not str or admissible is None:
            return None
        prefix = _prefix_of(excl)
        if (payload in _get(config, Q_FAILURES) and not _prefix_contains(prefix, payload)
                and payload in admissible):
            return A_EXCLUDE, _new_state(prefix.added(payload), evid, comp, deps, eb, cb, db,
                                         RUNNING, None, index, clock, None, None)
        return A_HOLD, _hold(state, index, f"inadmissible or repeated failure: {payload}")
    if verdict is V_MAYBE:
        if type(payload) is T_EVIDENCE:
            if _raw(<PyObject *>payload, N_EVIDENCE) is NULL:
                return None
            key = _get(payload, N_EVIDENCE)
            if type(key) is not str:
                return None
            prefix = _prefix_of(evid)
            if (key in _get(config, Q_EVIDENCE) and not _prefix_contains(prefix, key)
                    and eb > 0):
                lease = _new_lease("evidence", LEASE_EVIDENCE, key, index, clock + ticks)
                return A_GATHER, _new_state(excl, prefix.added(key), comp, deps, eb - 1, cb,
                                            db, RUNNING, None, index, clock, lease, None)
            return A_HOLD, _hold(state, index, f"inadmissible or repeated evidence need: {key}")
        if type(payload) is T_COMPUTE:
            if _raw(<PyObject *>payload, N_STEP) is NULL:
                return None
            key = _get(payload, N_STEP)
            if type(key) is not str:
                return None
            prefix = _prefix_of(comp)
            if (key in _get(config, Q_COMPUTE) and not _prefix_contains(prefix, key)
                    and cb > 0):
                return A_ADMIT, _new_state(excl, evid, prefix.added(key), deps, eb, cb - 1, db,
                                           RUNNING, SOURCE_ADMISSIBLE, index, clock, None, None)
            return A_HOLD, _hold(state, index, f"inadmissible or repeated compute need: {key}")
        return A_HOLD, _hold(state, index, "finite-rank control requires a typed MAYBE payload")
    if verdict is not V_IFF or type(payload) is not str or type(arcs) is not frozenset:
        return None
    if arcs:  # arcs are validated (and rarely used) by the reference module
        return None
    admissible = _get(config, Q_ADMISSIBLE_DEPS)
    if admissible is None:
        return None
    used = _prefix_of(_get(deps, D_USED))
    if (payload in _get(config, Q_DEPENDENCY) and not _prefix_contains(used, payload)
            and payload in admissible and db > 0):
        record = _new_record(used.added(payload), _get(deps, D_UNRESOLVED) | {payload},
                             _get(deps, D_RELATION), _get(deps, D_OUTCOMES))
        lease = _new_lease("dependency", LEASE_DEPENDENCY, payload, index, clock + ticks)
        return A_BIND, _new_state(excl, evid, comp, record, eb, cb, db - 1, RUNNING, None,
                                  index, clock, lease, None)
    return A_HOLD, _hold(state, index, f"inadmissible or repeated dependency: {payload}")


cdef object _event_hold(object state, str reason, object clock):
    """`_accounting_py._event_hold` (clock None keeps the state's clock)."""
    return _new_state(_get(state, S_EXCL), _get(state, S_EVID), _get(state, S_COMP),
                      _get(state, S_DEPS), _get(state, S_EB), _get(state, S_CB),
                      _get(state, S_DB), HELD, _get(state, S_DISP), _get(state, S_COUNT),
                      _get(state, S_CLOCK) if clock is None else clock, None, reason)


cdef object _with_lease(object state, object lease, object clock, object disposition,
                        object record):
    """`_accounting_py._with_lease`."""
    return _new_state(_get(state, S_EXCL), _get(state, S_EVID), _get(state, S_COMP), record,
                      _get(state, S_EB), _get(state, S_CB), _get(state, S_DB),
                      _get(state, S_STATUS), disposition, _get(state, S_COUNT), clock, lease,
                      _get(state, S_HELD))


cdef object _resolved(object record, object name, object outcome):
    """`_accounting_py._resolved` for the shapes `_complete_record` admits."""
    cdef object outcomes = _get(record, D_OUTCOMES)
    cdef object used = _get(record, D_USED)
    cdef object unresolved, relation
    if type(name) is not str:
        return _py._resolved(record, name, outcome)
    outcomes = outcomes if type(outcomes) is T_PREFIX else _st.outcome_prefix(outcomes)
    if _prefix_contains(outcomes, name):
        raise ValueError("A dependency may have only one recorded outcome.")
    if not (_prefix_contains(used, name) if type(used) is T_PREFIX else name in used):
        raise ValueError("Outcomes belong only to resolved dependencies.")
    unresolved = _get(record, D_UNRESOLVED)
    if name in unresolved:
        unresolved = unresolved - {name}
    relation = _get(record, D_RELATION)
    if relation:
        relation = frozenset([arc for arc in relation if name not in arc])
    return _new_record(used, unresolved, relation, outcomes.added(name, outcome))


cdef object _event_transition(object state, object event):
    """(action, after) exactly as `_accounting_py._event_transition` computes them, or
    None when the reference module must decide (its errors are raised alike)."""
    cdef object kind, lease, clock, lease_kind
    if type(event) is not T_EVENT_DATA or not _complete(state):
        return None
    for offset in (V_KIND, V_LEASE_ID, V_OUTCOME, V_DEPENDENCY, V_CLOCK):
        if _raw(<PyObject *>event, offset) is NULL:
            return None
    kind = _get(event, V_KIND)
    if not (kind is K_EVIDENCE_RETURNED or kind is K_RESOLVED or kind is K_ADVANCE
            or kind is K_EXPIRE or kind is K_INVALIDATE):
        return None
    if _get(state, S_STATUS) is not RUNNING:
        raise ValueError("A terminal controller cannot consume another event.")
    if kind is K_INVALIDATE:
        name = _get(event, V_DEPENDENCY)
        if name is not None and _get(state, S_DEPS).outcome_for(name) is not None:
            return A_HOLD, _event_hold(state, f"resolved dependency invalidated: {name}", None)
        return A_HOLD, _event_hold(state, "dependency invalidation has no prior resolution",
                                   None)
    lease = _get(state, S_LEASE)
    if lease is None:
        return A_HOLD, _event_hold(state, "controller event has no pending lease", None)
    if kind is K_ADVANCE:
        clock = _get(event, V_CLOCK)
        if clock is not None and type(clock) is not int:
            return None  # the reference raises its TypeError (or takes an int subclass)
        if clock is None or clock <= _get(state, S_CLOCK):
            return A_HOLD, _event_hold(state, "clock must advance strictly", None)
        if clock >= _get(lease, L_DEADLINE):
            return A_EXPIRE, _event_hold(state, "lease expired", clock)
        return A_WAIT, _with_lease(state, lease, clock, _get(state, S_DISP),
                                   _get(state, S_DEPS))
    if _get(event, V_LEASE_ID) != _get(lease, L_ID):
        return A_HOLD, _event_hold(state, "controller event names the wrong lease", None)
    if kind is K_EXPIRE:
        return A_EXPIRE, _event_hold(state, "lease expired", None)
    lease_kind = _get(lease, L_KIND)
    if kind is K_EVIDENCE_RETURNED:
        if lease_kind is not LEASE_EVIDENCE:
            return A_HOLD, _event_hold(state, "evidence returned for a dependency lease", None)
        return A_REEVALUATE, _with_lease(state, None, _get(state, S_CLOCK),
                                         _get(state, S_DISP), _get(state, S_DEPS))
    outcome = _get(event, V_OUTCOME)
    if lease_kind is not LEASE_DEPENDENCY or outcome is None:
        return A_HOLD, _event_hold(state, "invalid dependency resolution event", None)
    return A_REEVALUATE, _with_lease(
        state, None, _get(state, S_CLOCK), SOURCE_ADMISSIBLE,
        _resolved(_get(state, S_DEPS), _get(lease, L_OBLIGATION), outcome),
    )


# ------------------------------------------------------------------ steps


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


# ------------------------------------------------------------------ audit

cdef enum:
    _AHEAD = 12  # receipts between prefetching an alphabet slot and looking it up


cdef class _Replay:
    """What one audit_feed call reads from the config, and the run of exclusions it
    has verified (so the final rank need not look the same reasons up again)."""

    cdef object config, failures, admissible
    cdef bint hot, all_admissible
    cdef PySetObject *table
    cdef object run_log
    cdef Py_ssize_t run_start, run_end

    def __cinit__(self, config):
        self.config = config
        self.hot = False
        self.table = NULL
        if type(config) is T_CONFIG:
            self.failures = _get(config, Q_FAILURES)
            self.admissible = _get(config, Q_ADMISSIBLE)
            self.hot = type(self.failures) is frozenset and type(self.admissible) is frozenset
            self.all_admissible = self.admissible is self.failures
        if self.hot:
            self.table = <PySetObject *>self.failures

    cdef void prefetch(self, PyObject *receipt) noexcept:
        """Start loading the alphabet slot a later NO receipt's reason will hash to: the
        alphabet is as large as the trace, so each lookup is otherwise a cache miss."""
        cdef PyObject *payload
        cdef Py_hash_t hashed
        if FOUR_TYPE(receipt) != P_EVAL:
            return
        payload = _raw(receipt, R_PAYLOAD)
        if _is(payload, P_STR):
            hashed = (<PyASCIIObject *>payload).hash
            if hashed != -1:
                FOUR_PREFETCH(&self.table.table[<size_t>hashed & <size_t>self.table.mask])

    cdef int verified(self, object log, Py_ssize_t n) except -1:
        """Note that key n of the exclusion `log` is in the failure alphabet."""
        if log is self.run_log and n == self.run_end:
            self.run_end += 1
            return 0
        self.commit()
        self.run_log = log
        self.run_start = n
        self.run_end = n + 1
        return 0

    cdef int commit(self) except -1:
        """Extend the log's membership record of the failure alphabet by the verified
        run, when the run starts where the record ends."""
        cdef object log = self.run_log
        cdef object entry
        cdef Py_ssize_t checked
        if log is None:
            return 0
        self.run_log = None
        entry = log.count_entry(self.failures) if self.run_start == 0 else (
            _get(log, G_COUNTS).get(id(self.failures)))
        if entry is None or _get(entry, C_ALPHABET) is not self.failures:
            return 0
        checked = _get(entry, C_CHECKED)
        if self.run_start <= checked < self.run_end:
            _put(entry, C_CHECKED, self.run_end)
        return 0


cdef bytes _NO_CODE = _py._enc_bytes(V_NO)
cdef bytes _EXCLUDE_TAIL = b"{0:}" + _py._enc_bytes(A_EXCLUDE) + b"i"


cdef inline bint _same_int(PyObject *a, PyObject *b) except -1:
    """a == b for two exact ints (the same object is equal to itself)."""
    if not (_is(a, P_INT) and _is(b, P_INT)):
        return False
    return a == b or PyObject_RichCompareBool(<object>a, <object>b, Py_EQ)


cdef inline bint _kept(PyObject *after, PyObject *before, Py_ssize_t offset) noexcept:
    cdef PyObject *value = _raw(before, offset)
    return value is not NULL and _raw(after, offset) == value


cdef bint _exclusion_replays(_Replay r, PyObject *receipt, PyObject *state,
                             PyObject *prev) except -1:
    """True when `receipt` is a continuing NO from `state` (EXCLUDE_RETRY) that replays
    exactly and carries the chained digest; creates no object. It checks what the
    reference replay would: one new exclusion, in the alphabets, not seen before
    (keys of a log never repeat), and the rest of the state carried over."""
    global _len
    cdef PyObject *before = _raw(receipt, R_BEFORE)
    cdef PyObject *after = _raw(receipt, R_AFTER)
    cdef PyObject *payload = _raw(receipt, R_PAYLOAD)
    cdef PyObject *arcs = _raw(receipt, R_ARCS)
    cdef PyObject *claimed = _raw(receipt, R_DIGEST)
    cdef PyObject *old
    cdef PyObject *new
    cdef PyObject *log
    cdef PyObject *keys
    cdef PyObject *key
    cdef PyObject *base
    cdef long long index, count, n
    cdef const char *text
    cdef Py_ssize_t size, plen
    cdef unsigned char *at
    cdef unsigned char digest[32]
    if before != state or FOUR_TYPE(before) != P_STATE or not _is(after, P_STATE):
        return False
    if (_raw(receipt, R_VERDICT) != O_NO or _raw(receipt, R_ACTION) != O_EXCLUDE
            or not _is(payload, P_STR) or not _is(arcs, P_FROZENSET)
            or PySet_GET_SIZE(<object>arcs) != 0 or not _is(claimed, P_BYTES)
            or PyBytes_GET_SIZE(<object>claimed) != 32 or not _is(prev, P_BYTES)):
        return False
    if _raw(before, S_STATUS) != O_RUNNING or _raw(before, S_LEASE) != O_NONE:
        return False
    if not (_raw(after, S_STATUS) == O_RUNNING and _raw(after, S_DISP) == O_NONE
            and _raw(after, S_LEASE) == O_NONE and _raw(after, S_HELD) == O_NONE
            and _kept(after, before, S_EVID) and _kept(after, before, S_COMP)
            and _kept(after, before, S_DEPS)
            and _same_int(_raw(after, S_EB), _raw(before, S_EB))
            and _same_int(_raw(after, S_CB), _raw(before, S_CB))
            and _same_int(_raw(after, S_DB), _raw(before, S_DB))
            and _same_int(_raw(after, S_CLOCK), _raw(before, S_CLOCK))):
        return False
    if FOUR_TYPE(_raw(before, S_DEPS)) != P_RECORD:
        return False
    # evaluation_index = before.evaluation_count + 1 = after.evaluation_count
    if not (_as_ll(_raw(receipt, R_INDEX), &index) and _as_ll(_raw(before, S_COUNT), &count)):
        return False
    if count == LLONG_MAX or index != count + 1:
        return False
    if not _same_int(_raw(after, S_COUNT), _raw(receipt, R_INDEX)):
        return False
    # the exclusions grow by exactly this reason, in the shared log
    old = _raw(before, S_EXCL)
    new = _raw(after, S_EXCL)
    if not (_is(old, P_PREFIX) and _is(new, P_PREFIX)):
        return False
    log = _raw(old, P_LOG_SLOT)
    if not _is(log, P_LOG) or _raw(new, P_LOG_SLOT) != log:
        return False
    if not (_as_ll(_raw(old, P_N), &n) and _as_ll(_raw(new, P_N), &count)):
        return False
    keys = _raw(log, G_KEYS)
    if n < 0 or count != n + 1 or not _is(keys, P_LIST) or n >= PyList_GET_SIZE(<object>keys):
        return False
    key = PyList_GET_ITEM(<object>keys, n)
    if key != payload and not (FOUR_TYPE(key) == P_STR and PyObject_RichCompareBool(
            <object>key, <object>payload, Py_EQ)):
        return False
    base = _raw(log, G_BASE_KEYS)
    if not _is(base, P_FROZENSET) or (PySet_GET_SIZE(<object>base) != 0
                                      and PySet_Contains(<object>base, <object>payload)):
        return False
    # the reason is in the failure alphabet and admissible
    if not r.hot or not PySet_Contains(r.failures, <object>payload):
        return False
    if not r.all_admissible and not PySet_Contains(r.admissible, <object>payload):
        return False
    # the digest: R prev V <NO> s<len>:<reason> {0:} <EXCLUDE_RETRY> i<index>;
    text = four_utf8(payload, &size)
    if text is NULL:
        PyErr_Clear()
        return False
    plen = PyBytes_GET_SIZE(<object>prev)
    _len = 0
    _reserve(plen + size + 96)
    at = _buf
    at[0] = 82  # "R"
    memcpy(at + 1, PyBytes_AS_STRING(<object>prev), plen)
    at += 1 + plen
    at[0] = 86  # "V"
    memcpy(at + 1, PyBytes_AS_STRING(_NO_CODE), PyBytes_GET_SIZE(_NO_CODE))
    at += 1 + PyBytes_GET_SIZE(_NO_CODE)
    at[0] = 115  # "s"
    at = _digits(at + 1, size)
    at[0] = 58  # ":"
    memcpy(at + 1, text, size)
    at += 1 + size
    memcpy(at, PyBytes_AS_STRING(_EXCLUDE_TAIL), PyBytes_GET_SIZE(_EXCLUDE_TAIL))
    at = _digits(at + PyBytes_GET_SIZE(_EXCLUDE_TAIL), index)
    at[0] = 59  # ";"
    four_blake2b_256(_buf, at + 1 - _buf, digest)
    if memcmp(digest, PyBytes_AS_STRING(<object>claimed), 32) != 0:
        return False
    r.verified(<object>log, n)
    return True


cdef bint _sets_match(PyObject *a, PyObject *b) except -1:
    """a == b for the frozensets of a dependency record (strs and pairs of strs)."""
    return a == b or PyObject_RichCompareBool(<object>a, <object>b, Py_EQ)


cdef bint _fields_match(PyObject *a, PyObject *b) except -1:
    """a == b as ControllerState.__eq__ compares one field, for the shapes the C
    transitions produce; False (so the reference decides) for anything else."""
    cdef void *kind
    if a is NULL or b is NULL:
        return False
    kind = FOUR_TYPE(a)
    if kind != FOUR_TYPE(b):
        return False
    if a == b:  # these types are equal to themselves (no NaN-like values)
        return (kind == P_INT or kind == P_STR or kind == P_PREFIX or kind == P_FROZENSET
                or kind == P_LEASE or kind == P_RECORD or kind == P_TUPLE
                or a == O_NONE or a == <PyObject *>RUNNING or a == <PyObject *>ACCEPTED
                or a == <PyObject *>HELD or a == <PyObject *>SOURCE_ADMISSIBLE
                or a == <PyObject *>TERMINALLY_ACCEPTED)
    if kind == P_INT or kind == P_STR:
        return PyObject_RichCompareBool(<object>a, <object>b, Py_EQ)
    if kind == P_PREFIX:  # two prefixes of one log are equal when they have one length
        return (_raw(a, P_LOG_SLOT) == _raw(b, P_LOG_SLOT) and _raw(a, P_LOG_SLOT) is not NULL
                and _same_int(_raw(a, P_N), _raw(b, P_N)))
    if kind == P_LEASE:
        return (_fields_match(_raw(a, L_ID), _raw(b, L_ID))
                and _raw(a, L_KIND) == _raw(b, L_KIND) and _complete_lease(a)
                and _fields_match(_raw(a, L_OBLIGATION), _raw(b, L_OBLIGATION))
                and _fields_match(_raw(a, L_DEADLINE), _raw(b, L_DEADLINE)))
    if kind == P_RECORD:
        return (_complete_record(a) and _complete_record(b)
                and _fields_match(_raw(a, D_USED), _raw(b, D_USED))
                and _sets_match(_raw(a, D_UNRESOLVED), _raw(b, D_UNRESOLVED))
                and _sets_match(_raw(a, D_RELATION), _raw(b, D_RELATION))
                and _fields_match(_raw(a, D_OUTCOMES), _raw(b, D_OUTCOMES)))
    return False


cdef bint _states_match(object after, object replayed) except -1:
    """after == replayed (ControllerState.__eq__) decided in C; False when unsure."""
    cdef Py_ssize_t i
    if FOUR_TYPE(<PyObject *>after) != P_STATE:
        return False
    for i in range(13):
        if not _fields_match(_raw(<PyObject *>after, S_ALL[i]),
                             _raw(<PyObject *>replayed, S_ALL[i])):
            return False
    return True


cdef bint _evaluation_replays(object config, object receipt, object state,
                              object prev) except -1:
    """True when an evaluation receipt that follows `state` replays exactly through the
    C transition; False hands it to the reference audit."""
    cdef PyObject *r = <PyObject *>receipt
    cdef PyObject *verdict = _raw(r, R_VERDICT)
    cdef PyObject *payload = _raw(r, R_PAYLOAD)
    cdef PyObject *claimed = _raw(r, R_DIGEST)
    if _raw(r, R_BEFORE) != <PyObject *>state or verdict is NULL or payload is NULL:
        return False
    if not _is(claimed, P_BYTES) or not _is(<PyObject *>prev, P_BYTES):
        return False
    for offset in (R_ARCS, R_ACTION, R_AFTER, R_INDEX):
        if _raw(r, offset) is NULL:
            return False
    # `_replay_payload` leaves these shapes unchanged
    if verdict == O_NO or verdict == <PyObject *>V_IFF:
        if not _is(payload, P_STR):
            return False
    elif verdict == <PyObject *>V_YES:
        if payload != O_NONE:
            return False
    elif verdict == <PyObject *>V_MAYBE:
        if not (_is(payload, P_STR) or FOUR_TYPE(payload) == <void *>T_EVIDENCE
                or FOUR_TYPE(payload) == <void *>T_COMPUTE):
            return False
    else:
        return False
    action = <object>_raw(r, R_ACTION)
    index = <object>_raw(r, R_INDEX)
    arcs = <object>_raw(r, R_ARCS)
    try:  # the reference audit reports these errors
        if not _evaluation_digest_is(<object>claimed, prev, <object>verdict, <object>payload,
                                     arcs, action, index):
            return False
        step = _evaluation_transition(config, state, <object>verdict, <object>payload, arcs)
    except (TypeError, ValueError, AttributeError):
        return False
    if step is None or (<tuple>step)[0] is not action:
        return False
    replayed = (<tuple>step)[1]
    return (_fields_match(<PyObject *>index, _raw(<PyObject *>replayed, S_COUNT))
            and _states_match(<object>_raw(r, R_AFTER), replayed))


cdef bint _event_replays(object receipt, object state, object prev) except -1:
    """True when an event receipt that follows `state` replays exactly through the C
    transition; False hands it to the reference audit."""
    cdef PyObject *r = <PyObject *>receipt
    cdef PyObject *claimed = _raw(r, E_DIGEST)
    if _raw(r, E_BEFORE) != <PyObject *>state or not _is(claimed, P_BYTES):
        return False
    if not _is(<PyObject *>prev, P_BYTES) or _raw(r, E_ACTION) is NULL or _raw(r, E_AFTER) is NULL:
        return False
    event = <object>_raw(r, E_EVENT) if _raw(r, E_EVENT) is not NULL else None
    if type(event) is not T_EVENT_DATA:
        return False
    action = <object>_raw(r, E_ACTION)
    try:  # the reference audit reports these errors
        if _event_digest(prev, event, action) != <object>claimed:
            return False
        step = _event_transition(state, event)
    except (TypeError, ValueError, AttributeError):
        return False
    if step is None or (<tuple>step)[0] is not action:
        return False
    return _states_match(<object>_raw(r, E_AFTER), (<tuple>step)[1])


cdef bint _plain_list(object receipts):
    """Whether items can be read with PyList_GET_ITEM (a list whose indexing is list's)."""
    if type(receipts) is list:
        return True
    cls = type(receipts)
    return (isinstance(receipts, list) and cls.__getitem__ is list.__getitem__
            and cls.__len__ is list.__len__)


def audit_feed(config, cursor, receipts, Py_ssize_t start):
    """Audit `receipts[start:]`, continuing from `cursor` (which it advances)."""
    cdef Py_ssize_t position = start
    cdef Py_ssize_t size
    cdef object evaluations = cursor.evaluations
    cdef Py_ssize_t fast_evaluations = 0
    cdef object state = cursor.state
    cdef object prev = cursor.prev
    cdef object receipt
    cdef type kind
    cdef _Replay replay = _Replay(config)
    cdef bint listed = _plain_list(receipts)
    while True:
        size = PyList_GET_SIZE(receipts) if listed else len(receipts)
        if position >= size:
            break
        if listed:
            if replay.hot and position + _AHEAD < size:
                replay.prefetch(PyList_GET_ITEM(receipts, position + _AHEAD))
            receipt = <object>PyList_GET_ITEM(receipts, position)
        else:
            receipt = receipts[position]
        kind = type(receipt)
        if prev is not None and kind is T_EVAL and (
                _exclusion_replays(replay, <PyObject *>receipt, <PyObject *>state,
                                   <PyObject *>prev)
                or _evaluation_replays(config, receipt, state, prev)):
            fast_evaluations += 1
            prev = _get(receipt, R_DIGEST)
            state = _get(receipt, R_AFTER)
        elif prev is not None and kind is T_EVENT and _event_replays(receipt, state, prev):
            prev = _get(receipt, E_DIGEST)
            state = _get(receipt, E_AFTER)
        else:
            cursor.evaluations = evaluations + fast_evaluations
            cursor.state = state
            cursor.prev = prev
            _py._audit_one(config, cursor, receipt, position + 1)
            evaluations = cursor.evaluations
            fast_evaluations = 0
            state = cursor.state
            prev = cursor.prev
        position += 1
    replay.commit()
    cursor.evaluations = evaluations + fast_evaluations
    cursor.state = state
    cursor.prev = prev
    cursor.position = max(cursor.position, len(receipts))


def audit_result(config, cursor, head):
    """The AuditResult for everything fed to `cursor` so far (the cursor is unchanged)."""
    return _py.audit_result(config, cursor, head)
